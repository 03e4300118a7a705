/**
 * Shapes every detector shares. Offsets are UTF-16 code units of the raw
 * text the caller passed (JavaScript string indices), end exclusive.
 */

export interface Span {
  readonly start: number
  readonly end: number
}

export type DetectorName = "pii" | "secret" | "prompt_injection" | "system_prompt_leak" | "url"

export interface Finding {
  readonly detector: DetectorName
  /** What was found, e.g. `email`, `openai`, `instruction_override`, `canary`, `denied_domain`. */
  readonly category: string
  /** 0..1 where the detector scores (prompt_injection, system_prompt_leak). */
  readonly score?: number
  /** Raw ranges; a match found in decoded text covers the whole encoded range. */
  readonly spans: ReadonlyArray<Span>
  readonly message: string
}

/**
 * How a view was made from the raw text: `raw` itself; `folded` (NFKC,
 * confusables, invisible characters removed); `deobfuscated` (folded, lower
 * case, split words joined, leetspeak folded); `rot13` of the folded text;
 * `decoded` (a base64, hex or URL-encoded span, or bytes hidden in variation selectors, decoded once
 * and folded).
 */
export type ViewKind = "raw" | "folded" | "deobfuscated" | "rot13" | "decoded"

export interface TextView {
  readonly kind: ViewKind
  readonly text: string
  /** For decoded views: the encoding that was undone. */
  readonly encoding?: "base64" | "hex" | "url" | "variation_selectors"
  /** The raw range that produced view range [start, end). */
  readonly toRaw: (start: number, end: number) => Span
}
