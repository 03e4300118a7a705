/**
 * Shared by the policy language suites (policy-language-validation.test.ts,
 * policy-language-compile.test.ts): valid policy documents to start from.
 */

/** A valid YAML document; `extra` lines are appended, `match` lines replace the match block. */
export const yaml = (options: { readonly top?: string; readonly match?: string; readonly extra?: string } = {}) =>
  [
    options.top ??
      "id: no-refund-promise\ndescription: Never promise a refund\nfamily: content\nseverity: high\naction: deny",
    "match:",
    options.match ?? "  type: literal\n  value: full refund\n  target: content",
    options.extra ?? ""
  ].join("\n")

export const header = (action: string, family = "content") =>
  `id: p1\ndescription: d\nfamily: ${family}\nseverity: low\naction: ${action}`
