/**
 * Where the headless browser of the browser tests is: CHROMIUM_PATH when set,
 * else the Debian package's binary. A missing browser fails the suite (it is
 * never skipped); `.ci/run` installs the `chromium` package.
 */
import { existsSync } from "node:fs"

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/lib/chromium/chromium"]

export const chromiumPath = (): string => {
  const configured = process.env["CHROMIUM_PATH"]
  if (configured !== undefined && configured !== "") return configured
  const found = CANDIDATES.find((candidate) => existsSync(candidate))
  if (found === undefined) {
    throw new Error(
      `No Chromium found (looked at ${CANDIDATES.join(", ")}); install the chromium package or set CHROMIUM_PATH`
    )
  }
  return found
}
