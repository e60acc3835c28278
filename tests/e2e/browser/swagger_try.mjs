// Drives Swagger UI in headless Chromium (Debian's /usr/bin/chromium through
// playwright-core): loads the page, records console errors and failed
// requests, then runs one operation with "Try it out" and reports what the
// page showed. Usage: node swagger_try.mjs URL OPERATION_ID PARAMS_JSON BODY_JSON
// Prints one JSON object: {errors, failed, status, shown_status, body}.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, opId, paramsJson, bodyJson] = process.argv.slice(2);
const params = JSON.parse(paramsJson || "{}");
const profile = mkdtempSync(join(tmpdir(), "vt-chromium-"));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const out = { errors: [], failed: [] };
try {
  const page = ctx.pages()[0] || (await ctx.newPage());
  page.on("console", (m) => { if (m.type() === "error") out.errors.push(m.text()); });
  page.on("pageerror", (e) => out.errors.push(String(e)));
  page.on("requestfailed", (r) => out.failed.push(`${r.url()} ${r.failure()?.errorText}`));
  await page.goto(url, { waitUntil: "networkidle" });
  out.title = await page.title();
  const block = page.locator(`[id$="-${opId}"]`).first();
  await block.waitFor({ timeout: 20000 });
  out.operations = await page.locator(".opblock").count();
  await block.locator(".opblock-summary").first().click();
  await block.locator(".try-out__btn").click();
  for (const [name, value] of Object.entries(params)) {
    await block.locator(`tr[data-param-name="${name}"] input`).fill(String(value));
  }
  if (bodyJson) await block.locator("textarea.body-param__text").fill(bodyJson);
  const answer = page.waitForResponse((r) => r.request().method() !== "OPTIONS" &&
                                             r.url().includes("/api/v1/"), { timeout: 20000 });
  await block.locator("button.execute").click();
  const resp = await answer;
  out.status = resp.status();
  out.body = (await resp.text()).slice(0, 2000);
  const shown = block.locator(".live-responses-table tbody .response-col_status").first();
  await shown.waitFor({ timeout: 20000 });
  out.shown_status = (await shown.innerText()).trim();
  await page.waitForTimeout(300); // late console errors
} catch (e) {
  out.exception = String(e);
} finally {
  await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
