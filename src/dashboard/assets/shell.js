// The page shell every console page shares: sign-in form, navigation, sign-out, and small DOM
// helpers. A page calls start(render): render runs once a session exists (and again after a
// sign-in). All text from the API goes in as text (textContent), never as HTML.
import { api, session, sha256Hex, whenSessionEnds } from "./session.js"

export const $ = (id) => document.getElementById(id)

/** An element with attributes (on* are listeners, `class`, `text`, `data-*`, booleans) and children. */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue
    if (name === "text") element.textContent = String(value)
    else if (name === "class") element.className = value
    else if (name.startsWith("on")) element.addEventListener(name.slice(2), value)
    else element.setAttribute(name, value === true ? "" : String(value))
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) element.append(child)
  return element
}

/** A status line: role=status so screen readers hear loading and errors. */
export function message(target, text, kind = "muted") {
  target.className = kind
  target.textContent = text ?? ""
}

export const formatTime = (iso) => (iso ? new Date(iso).toLocaleString("en-GB", { hour12: false }) : "")

export const effectBadge = (effect) => el("span", { class: `badge effect-${effect}`, text: effect })

export function pageLink(path, params, text) {
  const search = new URLSearchParams(params).toString()
  return el("a", { href: search === "" ? path : `${path}?${search}`, text })
}

export const traceLink = (trace) =>
  pageLink("/dashboard/trace", { id: trace.trace_id }, trace.trace_id)

export const param = (name) => new URLSearchParams(location.search).get(name) ?? ""

function showSignIn(text) {
  $("board").hidden = true
  $("session").hidden = true
  $("nav").hidden = true
  $("sign-in").hidden = false
  const error = $("sign-in-error")
  error.hidden = !text
  error.textContent = text ?? ""
  $("username").focus()
}

let renderPage = async () => {}
// Whether this page has shown a session's data. A later sign-in (after the session ended) then starts
// from a freshly loaded page, so nothing the previous user saw, or still had in flight, stays on it.
let shown = false

async function showBoard() {
  const current = session.get()
  if (!current) return showSignIn()
  $("sign-in").hidden = true
  $("board").hidden = false
  $("session").hidden = false
  $("nav").hidden = false
  $("who").textContent = current.username ?? ""
  shown = true
  await renderPage()
}

async function signIn(event) {
  event.preventDefault()
  const button = $("sign-in-button")
  button.disabled = true
  try {
    const username = $("username").value.trim()
    const password = await sha256Hex($("password").value)
    const result = await api("POST", "/v1/auth/login", { username, password })
    session.set({ jwt: result.jwt, username: result.username ?? username, user_id: result.user_id })
    $("password").value = ""
    if (shown) return location.reload()
    await showBoard()
  } catch (error) {
    const text = error.status === 401 || error.status === 400
      ? "Wrong username or password."
      : error.status === 429 ? "Too many attempts; wait a minute and try again." : error.message
    showSignIn(text)
  }
  button.disabled = false
}

/** Wires the shell and renders the page once signed in; `onSignOut` clears page state. */
export function start(render, onSignOut = () => {}) {
  renderPage = render
  whenSessionEnds(showSignIn)
  const pageName = document.body.dataset.page
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === pageName) link.setAttribute("aria-current", "page")
  }
  $("sign-in-form").addEventListener("submit", signIn)
  // Signing out ends the session at the service too (a copy of the token is then worthless), and reloads
  // the page: the board and its pending requests go with the session.
  $("sign-out").addEventListener("click", async () => {
    await api("POST", "/v1/auth/logout").catch(() => {})
    session.clear()
    onSignOut()
    location.reload()
  })
  if (session.get()) void showBoard()
  else showSignIn()
}
