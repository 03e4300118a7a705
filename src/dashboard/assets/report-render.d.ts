/** Types of report-render.js for the service (src/redteam/SharedReports.ts renders /r/{token} with it). */
export declare function reportPage(report: unknown, hardening?: unknown): string
export declare function reportHtml(report: unknown, hardening?: unknown, options?: { readonly canEnable?: boolean }): string
