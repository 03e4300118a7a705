/**
 * Built-in content detectors (issue 17): pure, synchronous functions over a
 * text and its normalised views. `detectAll` builds the views once and runs
 * every configured detector over them.
 */
import { type TextViews, views } from "./Normalize.js"
import { detectPii, type PiiOptions } from "./Pii.js"
import { detectPromptInjection, type PromptInjectionOptions } from "./PromptInjection.js"
import { detectSecrets, type SecretOptions } from "./Secret.js"
import { detectSystemPromptLeak, type SystemPromptLeakOptions } from "./SystemPromptLeak.js"
import type { DetectorName, Finding } from "./Types.js"
import { detectUrls, type UrlOptions } from "./Url.js"

export type { DetectorName, Finding, Span, TextView, ViewKind } from "./Types.js"
export type { TextViews } from "./Normalize.js"
export { views } from "./Normalize.js"
export { detectPii, PII_CATEGORIES, type PiiCategory, type PiiOptions } from "./Pii.js"
export { detectPromptInjection, type PromptInjectionOptions } from "./PromptInjection.js"
export { detectSecrets, type SecretOptions } from "./Secret.js"
export { detectSystemPromptLeak, type SystemPromptLeakOptions } from "./SystemPromptLeak.js"
export { detectUrls, type UrlOptions } from "./Url.js"

export interface DetectorOptions {
  readonly pii: PiiOptions
  readonly secret: SecretOptions
  readonly prompt_injection: PromptInjectionOptions
  readonly system_prompt_leak: SystemPromptLeakOptions
  readonly url: UrlOptions
}

type Detect<Name extends DetectorName> = (input: string | TextViews, options?: DetectorOptions[Name]) => Array<Finding>

export const DETECTORS: { readonly [Name in DetectorName]: Detect<Name> } = {
  pii: detectPii,
  secret: detectSecrets,
  prompt_injection: detectPromptInjection,
  system_prompt_leak: detectSystemPromptLeak,
  url: detectUrls
}

/** Runs one detector by name. */
export const detect = <Name extends DetectorName>(
  name: Name,
  input: string | TextViews,
  options?: DetectorOptions[Name]
): Array<Finding> => (DETECTORS[name] as Detect<Name>)(input, options)

/** Runs the given detectors (all when absent) over one set of views of `raw`. */
export const detectAll = (
  raw: string,
  options: Partial<DetectorOptions> = {},
  only?: ReadonlyArray<DetectorName>
): Array<Finding> => {
  const textViews = views(raw)
  const names = only ?? (Object.keys(DETECTORS) as Array<DetectorName>)
  const findings: Array<Finding> = []
  for (const name of names) findings.push(...detect(name, textViews, options[name]))
  return findings
}
