/**
 * The version of the built-in detectors' behaviour, named in every policy set
 * (src/policysets): bump it whenever a detector finds differently (a pattern,
 * a checksum, a normalisation), so a decision's digest tells the detectors apart.
 */
export const DETECTORS_VERSION = "2026.11.2"
