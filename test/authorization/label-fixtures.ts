/** Label-policy rows for the checker tables: enabled, every label unset unless given. */
import type { LabelPolicyRow } from "../../src/catalog/Repo.js"

export const label = (origin: string, fields: Partial<LabelPolicyRow>): LabelPolicyRow => ({
  origin,
  enabled: true,
  version: 1,
  confidentiality: null,
  integrity: null,
  trust: null,
  ...fields
})
