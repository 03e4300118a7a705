// A red-team report as HTML text, used twice: by the service for the public page /r/{token}
// (no script there) and by the signed-in job page (which then wires the "enable" buttons).
// Every value from the report is escaped; the charts are inline SVG with their numbers in
// data-* attributes and <title>s.

const escape = (value) =>
  String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c])

const COLOURS = { landed: "#b42318", blocked: "#12803c", clean: "#596173", errored: "#8a6500" }
const OUTCOMES = ["landed", "blocked", "clean", "errored"]

/** Landed and blocked counts per category, most landed first. */
export function byCategory(findings) {
  const counts = new Map()
  for (const f of findings) {
    const entry = counts.get(f.category) ?? { category: f.category, landed: 0, blocked: 0 }
    if (f.outcome === "landed") entry.landed++
    else if (f.outcome === "blocked") entry.blocked++
    counts.set(f.category, entry)
  }
  return [...counts.values()].sort((a, b) => b.landed - a.landed || b.blocked - a.blocked || a.category.localeCompare(b.category))
}

/** Horizontal bars, one per row; each row's segments stack left to right. */
function barsSvg(rows, { label, title, id, width = 560, left = 170 }) {
  const max = Math.max(1, ...rows.map((row) => row.segments.reduce((sum, s) => sum + s.value, 0)))
  const rowHeight = 26
  const height = rows.length * rowHeight + 8
  const body = rows.map((row, i) => {
    const y = 4 + i * rowHeight
    let x = left
    const parts = row.segments.map((segment) => {
      const w = (segment.value / max) * (width - left - 170)
      const rect = `<rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="18" fill="${COLOURS[segment.key]}" data-key="${segment.key}" data-value="${segment.value}"><title>${escape(row.label)}: ${segment.value} ${segment.key}</title></rect>`
      x += w
      return rect
    }).join("")
    const total = row.segments.map((s) => `${s.value} ${s.key}`).join(", ")
    return `<g ${row.attributes}><text x="${left - 8}" y="${y + 13}" text-anchor="end">${escape(row.label)}</text>${parts}<text x="${(x + 6).toFixed(1)}" y="${y + 13}">${escape(total)}</text></g>`
  }).join("")
  return `<svg id="${id}" class="report-chart" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="${id}-title"><title id="${id}-title">${escape(title)}</title>${body}</svg>` +
    `<p class="muted">${escape(label)}</p>`
}

function legend(keys) {
  return `<ul class="legend report-legend">${keys.map((key) => `<li><svg viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" fill="${COLOURS[key]}"/></svg>${key}</li>`).join("")}</ul>`
}

function riskSection(a) {
  const score = Number(a.risk_score) || 0
  const shown = Math.min(Math.max(score, 0), 10)
  return `<section class="card" aria-labelledby="risk-title"><h2 id="risk-title">Risk</h2>
<p class="risk-line"><span class="badge risk-${escape(a.risk_level)}" id="risk-level">${escape(a.risk_level)}</span>
<strong id="risk-score" data-risk-score="${escape(score)}">${escape(score)}</strong> / 10</p>
<svg class="risk-meter" viewBox="0 0 200 12" preserveAspectRatio="none" role="img" aria-label="Risk score ${escape(score)} of 10"><rect width="200" height="12" rx="6" fill="#e6e9f0"/><rect width="${(shown * 20).toFixed(1)}" height="12" rx="6" fill="#b42318"/></svg>
<p>Attacks: <strong>${a.total}</strong> · landed <strong>${a.landed}</strong> · blocked <strong>${a.blocked}</strong> · clean ${a.clean} · errors ${a.errored} · success rate ${(a.success_rate * 100).toFixed(1)} %</p></section>`
}

function chartsSection(report) {
  const a = report.aggregates
  const outcomeRows = OUTCOMES.map((key) => ({ label: key, attributes: `data-outcome="${key}"`, segments: [{ key, value: a[key] ?? 0 }] }))
  const categories = byCategory(report.findings)
  const categoryRows = categories.map((c) => ({
    label: c.category,
    attributes: `data-category="${escape(c.category)}" data-landed="${c.landed}" data-blocked="${c.blocked}"`,
    segments: [{ key: "landed", value: c.landed }, { key: "blocked", value: c.blocked }]
  }))
  return `<section class="card" aria-labelledby="charts-title"><h2 id="charts-title">Outcomes</h2><div class="report-charts">
<div><h3>By outcome</h3>${barsSvg(outcomeRows, { id: "outcome-chart", title: "Attacks by outcome", label: `${a.total} attacks in all.`, width: 360, left: 70 })}</div>
<div><h3>Landed and blocked by category</h3>${legend(["landed", "blocked"])}
${categoryRows.length === 0 ? '<p class="muted">No attack landed or was blocked.</p>' : barsSvg(categoryRows, { id: "category-chart", title: "Landed and blocked attacks by category", label: `${a.landed} landed and ${a.blocked} blocked across ${categories.length} categories.` })}</div></div></section>`
}

/** A landed attack's turns: the stored transcript when the report has one, else prompt and reply. */
function transcript(finding) {
  const turns = Array.isArray(finding.transcript) && finding.transcript.length > 0
    ? finding.transcript.map((turn) => ({ who: turn.actor ?? turn.role ?? "", text: turn.content ?? turn.content_text ?? turn.text ?? "" }))
    : [{ who: "attacker", text: finding.prompt }, { who: "target", text: finding.evidence }]
  return `<ol class="transcript">${turns.map((t) => `<li><strong>${escape(t.who)}</strong><pre class="content">${escape(t.text)}</pre></li>`).join("")}</ol>`
}

function landedSection(report) {
  const landed = report.findings.filter((f) => f.landed)
  // Collapsed to one line each, so a long report stays scannable; the transcript opens in place.
  const items = landed.map((f) => `<details class="card landed-attack" data-seq="${f.seq}"><summary><strong>#${f.seq} ${escape(f.category)}</strong> <span class="badge sev-${escape(f.severity)}">${escape(f.severity)}</span> ${escape(f.goal)}</summary>
${transcript(f)}${f.trace_id ? `<p class="muted">Trace <code>${escape(f.trace_id)}</code></p>` : ""}</details>`).join("")
  return `<section aria-labelledby="landed-title"><h2 id="landed-title">Landed attacks (${landed.length})</h2>${items || '<p class="muted">None landed.</p>'}</section>`
}

function comparisonSection(comparison) {
  if (!comparison) return ""
  const list = (name, rows) => `<div data-comparison="${name}"><h3>${name[0].toUpperCase() + name.slice(1)} (${rows.length})</h3><ul>${rows.map((r) => `<li>${escape(r.attack)} · ${escape(r.category)} · ${escape(r.severity)}</li>`).join("") || '<li class="muted">none</li>'}</ul></div>`
  return `<section class="card" aria-labelledby="compare-title"><h2 id="compare-title">Compared with job <code>${escape(comparison.compare_job_id)}</code></h2>
<p>Landed before: ${comparison.landed_before} · now: ${comparison.landed_now}</p>
<div class="columns three">${list("new", comparison.new)}${list("fixed", comparison.fixed)}${list("persisting", comparison.persisting)}</div></section>`
}

function hardeningSection(hardening, options) {
  if (!hardening) return ""
  const rows = (hardening.candidates ?? []).map((c) => {
    const v = c.verify ?? {}
    const id = c.policy?.id ?? c.existing_policy_id ?? ""
    const enabled = c.policy?.enabled === true
    const action = enabled ? "enabled" : options.canEnable ? `<button type="button" data-enable-policy="${escape(id)}" aria-label="Enable ${escape(id)}">Enable</button>` : "disabled"
    return `<tr data-policy-id="${escape(id)}"><td><code>${escape(id)}</code></td><td>${escape(c.source)}</td>
<td>${v.blocked_landed}/${v.landed_total} landed blocked</td><td>${v.blocked_variants}/${v.variant_total} variants blocked</td>
<td>${v.false_blocks}/${v.control_total} false blocks</td><td>${v.passed ? "passed" : "failed"}</td><td>${action}</td></tr>`
  }).join("")
  return `<section class="card" aria-labelledby="hardening-title"><h2 id="hardening-title">Hardening candidates</h2>
<p class="muted">Generated ${escape(hardening.generated_at)}; each candidate policy was replayed against the landed attacks, variants of them and benign controls.</p>
${rows === "" ? '<p class="muted">No candidates.</p>' : `<table class="data"><thead><tr><th scope="col">Policy</th><th scope="col">Source</th><th scope="col">Landed</th><th scope="col">Variants</th><th scope="col">Controls</th><th scope="col">Replay</th><th scope="col">State</th></tr></thead><tbody>${rows}</tbody></table>`}
${(hardening.rejections ?? []).length > 0 ? `<p class="muted">${hardening.rejections.length} candidates rejected: ${hardening.rejections.map((r) => escape(r.reason)).join(", ")}</p>` : ""}</section>`
}

/** The report body (no <html>): options.canEnable adds the enable buttons. */
export function reportHtml(report, hardening = null, options = {}) {
  const job = report.job
  return `<header class="report-head"><h1>Red-team report</h1>
<p>Job <code>${escape(job.id)}</code> · target <code>${escape(job.target)}</code> · profile ${escape(job.profile)} · status ${escape(job.status)} · generated ${escape(report.generated_at)}</p></header>
${riskSection(report.aggregates)}${chartsSection(report)}${comparisonSection(report.comparison)}${hardeningSection(hardening ?? report.hardening ?? null, options)}${landedSection(report)}`
}

/** A whole page around the report, for the public link (styles from the console, no script). */
export function reportPage(report, hardening = null) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>Red-team report ${escape(report.job.id)}</title>
<link rel="stylesheet" href="/dashboard/dashboard.css"></head>
<body class="report-page"><main id="main">${reportHtml(report, hardening)}</main></body></html>`
}
