/** Every checker, in the order the pipeline runs them (and lists their findings). */
import type { Checker } from "../Pipeline.js"
import { approvalChecker } from "./Approval.js"
import { contentChecker } from "./Content.js"
import { flowChecker } from "./Flow.js"
import { memoryChecker } from "./Memory.js"
import { paramChecker } from "./Param.js"
import { profileChecker } from "./Profile.js"

export { approvalChecker, contentChecker, flowChecker, memoryChecker, paramChecker, profileChecker }

export const allCheckers: ReadonlyArray<Checker> = [
  contentChecker,
  profileChecker,
  paramChecker,
  flowChecker,
  approvalChecker,
  memoryChecker
]
