/** The `tests` of a policy document: example events and the effect each must get (docs/policies.md, "Lifecycle"). */
import { Schema } from "effect"
import { DecisionEffect, EventKind, ProposedAction } from "../authorization/Domain.js"
import { boundedArray, Identifier, LongText, NonEmptyName } from "../platform/Schemas.js"

export const MAX_POLICY_TESTS = 50

export const PolicyTestCase = Schema.Struct({
  name: NonEmptyName,
  event: Schema.Struct({
    kind: Schema.optional(EventKind.annotations({ description: "Default output.proposed" })),
    action: ProposedAction
  }),
  expect: DecisionEffect.annotations({ description: "The effect the event must get" }),
  transformed_value: Schema.optional(
    LongText.annotations({ description: "With expect rewrite: the rewritten content it must give" })
  )
}).annotations({ identifier: "PolicyTestCase" })
export type PolicyTestCase = typeof PolicyTestCase.Type

export const PolicyTests = boundedArray(PolicyTestCase, MAX_POLICY_TESTS).annotations({
  description: `Up to ${MAX_POLICY_TESTS} example events run at validate, create and replace (each against this policy alone)`
})

export const RunPolicyTests = Schema.Struct({
  ids: Schema.optional(
    boundedArray(Identifier, 1000).annotations({
      description: "The policies whose tests run; default every enabled one"
    })
  )
}).annotations({ identifier: "RunPolicyTests" })

export const PolicyTestReport = Schema.Struct({
  results: Schema.Array(
    Schema.Struct({
      policy_id: Schema.String,
      name: Schema.String,
      passed: Schema.Boolean,
      expected: DecisionEffect,
      actual: DecisionEffect
    })
  ),
  passed: Schema.Int,
  failed: Schema.Int
}).annotations({ identifier: "PolicyTestReport" })
