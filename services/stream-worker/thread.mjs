// Worker threads do not inherit the parent's `--import tsx` loader hooks: register them here, then load the TypeScript entry.
import { register } from "tsx/esm/api"

register()
await import("./thread.ts")
