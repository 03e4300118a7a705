// Red-team jobs (signed in): the recent jobs, and one job's report (GET
// /v1/redteam/jobs/{id}/report, optionally compared with another job of the same agent) drawn
// by report-render.js like the public /r/{token} page, with the stored hardening candidates
// (GET /v1/redteam/jobs/{id}/hardening) and, for owners and admins, a button that enables a
// candidate policy (PATCH /v1/policies/{id}/enabled).
import { reportHtml } from "./report-render.js"
import { api, query } from "./session.js"
import { $, el, formatTime, message, pageLink, param, start } from "./shell.js"

const PAGE_SIZE = 20
const jobId = param("job")
const compareId = param("compare")

async function showJobs(cursor) {
  $("jobs-view").hidden = false
  try {
    const page = await api("GET", "/v1/redteam/jobs" + query({ limit: PAGE_SIZE, cursor }))
    $("jobs-body").replaceChildren(...page.jobs.map((job) => el("tr", {},
      el("td", { text: formatTime(job.created_at) }),
      el("td", {}, pageLink("/dashboard/redteam", { job: job.id }, job.id)),
      el("td", { text: job.target }),
      el("td", { text: job.profile }),
      el("td", { text: job.status }))))
    const next = $("jobs-next")
    next.disabled = !page.next_cursor
    next.onclick = () => showJobs(page.next_cursor)
    message($("jobs-message"), page.jobs.length === 0 ? "No red-team jobs yet." : "")
  } catch (error) {
    if (error.status !== 401) message($("jobs-message"), `Could not list jobs: ${error.message}`, "error")
  }
}

/** Owners and admins may enable policies; /v1/me says which the signed-in user is. */
async function canEnable() {
  try {
    const me = await api("GET", "/v1/me")
    return me.role === "owner" || me.role === "admin"
  } catch {
    return false
  }
}

async function fillCompare(job) {
  const select = $("compare-select")
  try {
    const page = await api("GET", "/v1/redteam/jobs" + query({ agent_id: job.agent_id ?? undefined, limit: PAGE_SIZE }))
    for (const other of page.jobs) {
      if (other.id === job.id || other.agent_id !== job.agent_id) continue
      select.append(new Option(`${other.id} (${formatTime(other.created_at)})`, other.id))
    }
    select.value = compareId
  } catch {
    // Comparison stays unavailable; the report still shows.
  }
}

async function enable(button) {
  const id = button.dataset.enablePolicy
  button.disabled = true
  try {
    await api("PATCH", `/v1/policies/${encodeURIComponent(id)}/enabled`, { enabled: true })
    button.replaceWith("enabled")
    message($("job-message"), `Policy ${id} enabled.`)
  } catch (error) {
    button.disabled = false
    message($("job-message"), `Could not enable ${id}: ${error.message}`, "error")
  }
}

async function showJob() {
  $("job-view").hidden = false
  message($("job-message"), "Loading…")
  try {
    const path = `/v1/redteam/jobs/${encodeURIComponent(jobId)}`
    const [report, hardening, admin] = await Promise.all([
      api("GET", `${path}/report` + query({ compare_job_id: compareId })),
      api("GET", `${path}/hardening`).catch((error) => (error.status === 404 ? null : Promise.reject(error))),
      canEnable()
    ])
    // report-render.js escapes every value it puts in the markup.
    $("report").innerHTML = reportHtml(report, hardening, { canEnable: admin })
    for (const button of $("report").querySelectorAll("button[data-enable-policy]")) {
      button.addEventListener("click", () => enable(button))
    }
    message($("job-message"), "")
    await fillCompare(report.job)
  } catch (error) {
    if (error.status !== 401) message($("job-message"), `Could not load the report: ${error.message}`, "error")
  }
}

$("compare-form").addEventListener("submit", (event) => {
  event.preventDefault()
  const compare = $("compare-select").value
  location.search = new URLSearchParams(compare === "" ? { job: jobId } : { job: jobId, compare }).toString()
})
start(() => (jobId === "" ? showJobs(undefined) : showJob()))
