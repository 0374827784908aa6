import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The page's files, shipped beside this module (`assets/`, copied to `dist` by the build). */
export const DASHBOARD_ASSET_FILES = ['index.html', 'app.js', 'app.css'] as const;

/** Content security policy of the page: its own script and style, nothing inline, no framing. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'self'; form-action 'none'; frame-ancestors 'none'";

/** The page's files, read once. */
export class DashboardAssets {
  private readonly files = new Map<string, string>();

  constructor(dir: string = join(__dirname, 'assets')) {
    for (const file of DASHBOARD_ASSET_FILES) this.files.set(file, readFileSync(join(dir, file), 'utf8'));
  }

  /** The page, with `<base href>` set to where it is served so that its relative URLs resolve. */
  page(base: string): string {
    return this.file('index.html').replace('%BASE_HREF%', escapeAttribute(base));
  }

  file(name: (typeof DASHBOARD_ASSET_FILES)[number]): string {
    return this.files.get(name) ?? '';
  }
}

function escapeAttribute(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
