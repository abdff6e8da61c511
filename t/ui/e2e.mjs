// t/ui/e2e.mjs: the web UI end to end in a real headless Chromium (the
// system's, driven by playwright-core; no browser is downloaded), against
// the Apache::Test server. t/ui/browser.t prepares the data and runs it:
//
//   SVC_UI_URL       the UI's server (sign-in lands there)
//   SVC_UI_CHROMIUM  the chromium executable
//   SVC_UI_ORG       an org the signed-in user owns, with a model provider
//   SVC_UI_XSS_ORG   another of theirs, named <img src=x onerror=alert(1)>
//   SVC_UI_RESULT    a file to write what browser.t checks afterwards
//
// Prints one TAP-like line per check ("ok - ..." / "not ok - ..."), which
// browser.t turns into its own assertions; exits 1 when any failed.
import { BASE, XSS, CSP, result, check, watch, newContext, axe, clean, text, run } from './lib.mjs';

const ORG = process.env.SVC_UI_ORG;
const XSS_ORG = process.env.SVC_UI_XSS_ORG;
const SCRIPT_LINE = '<script>window.__svcPwned=1</script>';

await run(async (browser) => {
    const seen = { dialogs: [], errors: [] };
    const ctx = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    watch(page, seen);
    page.setDefaultTimeout(30000);

    // --- sign in, through the fake code-hosting provider -------------------------------
    const first = await page.goto(`${BASE}/orgs/${ORG}`);
    check(first.status() === 200, 'a UI path loads the page');
    check(first.headers()['content-security-policy'] === CSP, '... with the strict CSP',
          first.headers()['content-security-policy']);
    await page.locator('#sign-in').waitFor();
    check(true, 'signed out: the sign-in page');
    check((await page.getAttribute('#sign-in', 'href'))
          === `/auth/login?return_to=${encodeURIComponent(`/orgs/${ORG}`)}`,
          '... its link goes to /auth/login, back to this page after');
    await axe(page, 'the sign-in page');
    await page.click('#sign-in');
    await page.waitForURL(`${BASE}/orgs/${ORG}`);
    await page.locator('#whoami').waitFor();
    check(true, 'signed in through the provider, back on the org page');
    const cookie = (await ctx.cookies()).find((c) => c.name === 'service_session');
    check(cookie && cookie.httpOnly, 'the session cookie is HttpOnly (no script reads it)');

    // --- the org switcher and home ------------------------------------------------------
    await page.goto(`${BASE}/`);
    await page.locator('#orgs').waitFor();
    const orgs = await text(page, '#orgs');
    check(orgs.includes(XSS), 'home lists an org named <img src=x onerror=alert(1)> as text', orgs);
    await axe(page, 'home');
    await clean(page, seen, 'home');
    await page.goto(`${BASE}/orgs/${ORG}`);
    await page.locator('#projects').waitFor();
    check(await page.inputValue('#org-switcher') === ORG, 'the org switcher shows the org');
    await page.selectOption('#org-switcher', XSS_ORG);
    await page.waitForURL(`${BASE}/orgs/${XSS_ORG}`);
    await page.locator('#projects').waitFor();
    check(await text(page, 'main h1') === XSS, 'switched: that org\'s name is its title, as text');
    await clean(page, seen, 'the <img> org');
    await page.selectOption('#org-switcher', ORG);
    await page.waitForURL(`${BASE}/orgs/${ORG}`);
    await page.locator('#recent-runs').waitFor();
    await axe(page, 'the org home');

    // --- a project, made in the UI, with a hostile name -----------------------------------
    await page.fill('#new-project input[name=slug]', 'web');
    await page.fill('#new-project input[name=name]', XSS);
    await page.click('#new-project button[type=submit]');
    await page.waitForURL(`${BASE}/orgs/${ORG}/projects/web`);
    await page.locator('#new-run').waitFor();
    check(await text(page, 'main h1') === XSS, 'a project is created; its name shows as text');
    await clean(page, seen, 'the project page');
    await axe(page, 'the project page');

    // A refusal shows the problem's detail and request id: the slug is taken.
    await page.goto(`${BASE}/orgs/${ORG}`);
    await page.locator('#recent-runs').waitFor();
    await page.fill('#new-project input[name=slug]', 'web');
    await page.fill('#new-project input[name=name]', 'Again');
    await page.click('#new-project button[type=submit]');
    await page.locator('#problem').waitFor();
    const problem = await text(page, '#problem');
    check(/already|taken|exists|in use/i.test(problem) && /Request id: req_\w+/.test(problem),
          'a refused creation shows the problem\'s detail and request id', problem);
    check(page.url() === `${BASE}/orgs/${ORG}`, '... and stays on the page');
    await axe(page, 'the org home with an error shown');

    // --- a run, followed live ------------------------------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/projects/web`);
    await page.fill('#new-run textarea', 'Print a line.');
    await page.click('#new-run button[type=submit]');
    await page.waitForURL(/\/orgs\/[^/]+\/projects\/web\/runs\/run_\w+$/);
    const runUrl = page.url();
    result.run_id = runUrl.replace(/.*\//, '');
    // The agent's command prints a script tag, then sleeps: the line is on
    // the page while the run is still running.
    await page.waitForFunction((s) => (document.getElementById('log')?.textContent ?? '').includes(s),
                               SCRIPT_LINE, { timeout: 90000 });
    const during = await text(page, '#run-status');
    check(during === 'running', 'a log line appears live, while the run is running', during);
    result.seen_live_while = during;
    check(await page.locator('#log script').count() === 0,
          '... a log line holding <script> is text, not an element');
    await page.waitForFunction(() => document.getElementById('run-status')?.textContent === 'succeeded',
                               null, { timeout: 120000 });
    check(true, 'the run page shows it succeeded, from the event stream');
    const log = await text(page, '#log');
    check(log.includes(SCRIPT_LINE) && log.indexOf(SCRIPT_LINE) === log.lastIndexOf(SCRIPT_LINE),
          '... the line once in the log, as written');
    await page.locator('#artifact').waitFor();
    const href = await page.getAttribute('#artifact', 'href');
    check(href === `/api/orgs/${ORG}/runs/${result.run_id}/artifact`, '... and links the artifact');
    const art = await page.request.get(BASE + href);
    check(art.status() === 200 && /attachment/.test(art.headers()['content-disposition'] || ''),
          '... which downloads with the session', art.status());
    check((await text(page, '#result')).includes('Print the line'), '... with the result\'s summary');
    await clean(page, seen, 'the run page');
    await axe(page, 'the run page');
    await page.goto(`${BASE}/orgs/${ORG}`);
    await page.locator(`#recent-runs a[href$="${result.run_id}"]`).waitFor();
    check(true, 'the org home lists it among the recent runs');
    await page.goto(`${BASE}/orgs/${ORG}/projects/web`);
    await page.locator(`#runs a[href$="${result.run_id}"]`).waitFor();
    check((await text(page, '#runs')).includes('succeeded'), 'the project\'s runs list it, succeeded');

    // --- personal access tokens ------------------------------------------------------------
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
    await page.goto(`${BASE}/tokens`);
    await page.locator('#tokens').waitFor();
    await axe(page, 'the tokens page');
    await page.fill('#new-token input[name=name]', XSS);
    await page.selectOption('#new-token select[name=scope]', 'read');
    await page.click('#new-token button[type=submit]');
    await page.locator('#token-secret').waitFor();
    const secret = await text(page, '#token-secret');
    result.token = secret;
    check(/^svc_pat_[A-Za-z0-9]+$/.test(secret), 'a token is created: its secret is shown');
    await page.click('#copy-token');
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Copied.');
    check(await page.evaluate(() => navigator.clipboard.readText()) === secret,
          '... and the copy button puts it on the clipboard');
    const row = page.locator('#tokens li', { hasText: XSS });
    check(await row.count() === 1, '... it is listed, its <img> name as text');
    await clean(page, seen, 'the tokens page');
    await axe(page, 'the tokens page with a new secret');
    await page.reload();
    await page.locator('#tokens li[data-token-id]').first().waitFor();
    check(await page.locator('#token-secret').count() === 0
          && !(await page.evaluate(() => document.body.textContent)).includes(secret),
          '... and the secret is never shown again');
    await page.click(`#tokens li:has-text("${XSS.replace(/"/g, '\\"')}") button`);
    await page.locator('#tokens li', { hasText: XSS }).locator('.badge.revoked').waitFor();
    check(true, 'revoked: the list says so');
    check(await page.locator('#tokens li', { hasText: XSS }).locator('button').count() === 0,
          '... and offers no second revoke');

    // --- 375 px wide -----------------------------------------------------------------------------
    const phone = await newContext(browser, {
        viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
        storageState: await ctx.storageState(),
    });
    const small = await phone.newPage();
    const seenSmall = { dialogs: [], errors: [] };
    watch(small, seenSmall);
    for (const [p, sel] of [[`/orgs/${ORG}`, '#recent-runs li'], [`/orgs/${ORG}/projects/web`, '#runs li'],
                            [`/orgs/${ORG}/projects/web/runs/${result.run_id}`, '#artifact'],
                            ['/tokens', '#tokens li'], ['/', '#orgs']]) {
        await small.goto(BASE + p);
        await small.locator(sel).first().waitFor();
        const w = await small.evaluate(() => document.documentElement.scrollWidth);
        check(w <= 375, `375 px wide: ${p} needs no sideways scrolling`, w);
        check(await small.locator('#sign-out').isVisible(), `... ${p}: sign out is in reach`);
        await axe(small, `${p} at 375 px`);
        await clean(small, seenSmall, `${p} at 375 px`);
    }
    await phone.close();

    // --- keyboard: the skip link and the forms are reachable ----------------------------------
    await page.goto(`${BASE}/tokens`);
    await page.locator('#tokens').waitFor();
    await page.keyboard.press('Tab');
    check(await page.evaluate(() => document.activeElement.className) === 'skip',
          'keyboard: the first Tab reaches the skip link');

    // --- sign out --------------------------------------------------------------------------------
    await page.click('#sign-out');
    await page.waitForURL(`${BASE}/`);
    await page.locator('#sign-in').waitFor();
    check(true, 'signed out: back to the sign-in page');
    const me = await page.request.get(`${BASE}/api/me`);
    check(me.status() === 401, '... and the session is over (GET /api/me: 401)', me.status());
    await ctx.close();
});
