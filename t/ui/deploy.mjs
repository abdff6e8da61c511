// t/ui/deploy.mjs: the deployments pages and filing an improvement in a
// real headless Chromium (t/ui/lib.mjs), with a real deploy agent
// (build/svc-agent) that t/ui/deploy.t starts when this walk hands it the
// key. t/ui/deploy.t prepares the data and runs it:
//
//   SVC_UI_ORG      an org the signed-in user owns
//   SVC_UI_PROJECT  a project of it (slug) with one succeeded run
//   SVC_UI_RUN      that run: its artifact serves HTTP (a Procfile), says
//                   hello with a <script> in its output, and fails its
//                   health checks while the file "fail" is in its checkout
//   SVC_UI_COORD    a directory this walk and deploy.t's helper talk through:
//                   the walk writes key1 (the enrollment key: the helper
//                   starts the agent), fail (a deployment id: the helper
//                   makes its workload fail), heal, key2 (the rotated key:
//                   the helper tries both keys, restarts the agent with the
//                   new one, then writes rotated)
//
// What deploy.t checks afterwards goes to SVC_UI_RESULT.
import { existsSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { BASE, XSS, result, check, newContext, watchedPage, axe, clean, text, signIn, run }
    from './lib.mjs';

const ORG = process.env.SVC_UI_ORG;
const RUN = process.env.SVC_UI_RUN;
const COORD = process.env.SVC_UI_COORD;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tell(name, value) {
    writeFileSync(join(COORD, `${name}.tmp`), value);
    renameSync(join(COORD, `${name}.tmp`), join(COORD, name));
}

async function heard(name, timeout = 90000) {
    for (const end = Date.now() + timeout; Date.now() < end; await sleep(200)) {
        if (existsSync(join(COORD, name))) {
            return true;
        }
    }
    throw new Error(`deploy.t's helper did not write ${name}`);
}

// Reloads (or clicks Refresh) until cond(page) holds: the lists of the
// deployments page are read when it loads.
async function until(page, cond, what, { timeout = 90000, refresh = null } = {}) {
    for (const end = Date.now() + timeout; Date.now() < end;) {
        if (await cond()) {
            return true;
        }
        await sleep(1000);
        if (refresh) {
            await page.click(refresh);
            await page.waitForLoadState();
        } else {
            await page.reload();
        }
    }
    throw new Error(`waited in vain: ${what}`);
}

async function statusIs(page, want, timeout = 90000) {
    await page.waitForFunction((s) => document.getElementById('dep-status')?.textContent === s,
                               want, { timeout });
}

async function narrow(browser, ctx, pages) {
    const phone = await newContext(browser, {
        viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
        storageState: await ctx.storageState(),
    });
    const small = await watchedPage(phone);
    for (const [p, sel] of pages) {
        await small.goto(BASE + p);
        await small.locator(sel).first().waitFor();
        const w = await small.evaluate(() => document.documentElement.scrollWidth);
        check(w <= 375, `375 px wide: ${p} needs no sideways scrolling`, await small.evaluate(
            () => [...document.querySelectorAll('main *')]
                .filter((e) => e.getBoundingClientRect().right > 375)
                .map((e) => `${e.tagName}#${e.id}.${e.className}`).slice(0, 10).join(' ')));
        await axe(small, `${p} at 375 px`);
        await clean(small, small.seen, `${p} at 375 px`);
    }
    await phone.close();
}

await run(async (browser) => {
    const ctx = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
    const page = await watchedPage(ctx);
    await signIn(page, `/orgs/${ORG}/deployments`);
    check(true, 'signed in through the provider, on the deployments page');
    await page.locator('#targets li').first().waitFor();
    check((await text(page, '#targets')).includes('No targets yet'), 'no target yet');
    await axe(page, 'the deployments page (empty)');

    // --- a target: its key shown once, the agent enrolls ---------------------------------
    await page.fill('#new-target input[name=name]', XSS);
    await page.click('#new-target button[type=submit]');
    await page.locator('#target-key-value').waitFor();
    const key1 = await text(page, '#target-key-value');
    check(/^svc_dek_\w+$/.test(key1), 'a deploy target is added: its enrollment key is shown');
    await page.click('#copy-target-key');
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Copied.');
    check(await page.evaluate(() => navigator.clipboard.readText()) === key1,
          '... and Copy puts it on the clipboard');
    const tli = page.locator('#targets li[data-target-id]');
    check(await tli.locator('strong').textContent() === XSS, '... its <img> name is text');
    result.target_id = await tli.getAttribute('data-target-id');
    result.key1 = key1;
    await clean(page, page.seen, 'the deployments page with the key');
    tell('key1', key1);
    await until(page, async () => await page.locator('#targets li .badge.online').count() === 1,
                'the target online');
    check(true, 'the agent enrolls with the key: the target is online');
    check((await text(page, '#targets li')).includes('agent '), '... its agent is shown');
    check(!(await page.evaluate(() => document.body.textContent)).includes(key1),
          '... and the key is not shown again');

    // --- a deployment: created, its plan approved, running ---------------------------------
    await page.locator('#new-deployment select[name=run_id] option[value^="run_"]')
        .waitFor({ state: 'attached' });
    await page.selectOption('#new-deployment select[name=run_id]', RUN);
    await page.selectOption('#new-deployment select[name=target_id]', result.target_id);
    await page.click('#new-deployment button[type=submit]');
    await page.waitForURL(/\/deployments\/dep_\w+$/);
    result.deployment_id = page.url().replace(/.*\//, '');
    check(true, `a deployment is created (${result.deployment_id}): its page opens`);
    await statusIs(page, 'planned');
    check((await text(page, '#deployment')).includes('python3 app.py'),
          '... planned from the Procfile: the plan is shown');
    await axe(page, 'the deployment, planned');
    await page.click('#deployment button[data-action=approve]');
    await statusIs(page, 'running');
    check(true, 'the plan is approved: the agent runs it (the page follows the status live)');
    await until(page, async () => await page.locator('#workload li').count() === 1,
                'the workload reported', { refresh: '#refresh' });
    check((await text(page, '#workload')).includes('healthy'), '... one replica, healthy');

    // --- scaled to two -------------------------------------------------------------------
    await page.fill('#scale input[name=replicas]', '2');
    await page.click('#scale button[type=submit]');
    await page.waitForFunction(() => document.getElementById('dep-replicas')?.textContent === '2');
    await statusIs(page, 'running');
    await until(page, async () => await page.locator('#workload li', { hasText: 'healthy' })
        .filter({ hasNotText: 'not healthy' }).count() === 2, 'two healthy replicas',
                { refresh: '#refresh' });
    check(true, 'scaled to two replicas: both run, healthy');

    // --- telemetry: logs, metrics, uptime ---------------------------------------------------
    await page.fill('#request-logs input[name=lines]', '50');
    await page.click('#request-logs button[type=submit]');
    await page.waitForFunction(() => /replica 1 \| hello/.test(
        document.getElementById('logs')?.textContent || ''), null, { timeout: 60000 });
    const logs = await text(page, '#logs');
    check(/^replica 0 \| hello <script>window\.__svcPwned=1<\/script> from port \d+$/m.test(logs)
          && /^replica 1 \| hello/m.test(logs),
          'logs asked for: the lines the agent uploads appear, each replica\'s, as text', logs);
    check(await page.locator('#logs *').count() === 0, '... no element in the log');
    await until(page, async () => await page.locator('#metrics tr[data-replica="all"]').count() === 1
                && await page.locator('#metrics tr[data-replica="1"]').count() === 1,
                'metrics of both replicas', { refresh: '#refresh' });
    check(/MiB/.test(await text(page, '#metrics tr[data-replica="all"]')),
          'metrics: each replica and their sum, with their memory');
    check(/\d+\.\d\d %/.test(await text(page, '#uptime'))
          && await page.locator('#uptime .bucket:not(.unknown)').count() >= 1,
          'uptime: the availability, and the buckets with probes', await text(page, '#uptime'));
    await clean(page, page.seen, 'the deployment with its telemetry');
    await axe(page, 'the deployment, running, with its telemetry');

    // --- an incident: shown as it is filed, approved from the page ---------------------------
    check((await text(page, '#incidents')).includes('None'), 'no incident while it answers');
    tell('fail', result.deployment_id);
    await page.locator('#incidents li[data-improvement-id]').waitFor({ timeout: 60000 });
    const inc = page.locator('#incidents li[data-improvement-id]');
    result.incident = await inc.getAttribute('data-improvement-id');
    check((await inc.textContent()).includes(`${result.deployment_id} fails its health checks`),
          'the failing workload\'s incident appears on the page as it is filed');
    await page.waitForFunction((i) => document.getElementById('deployment')?.textContent.includes(i),
                               result.incident);
    check(true, '... and the deployment names it as its open incident');
    await axe(page, 'the deployment with an incident');
    await inc.locator('button:has-text("Approve")').click();
    await page.locator('#incidents li .badge.approved').waitFor();
    check(await page.locator('#incidents li a[href*="/requests/rqs_"]').count() === 1,
          'the incident is approved: a request is made of it, linked');
    tell('heal', '1');

    // --- 375 px wide, while the target and the deployment have everything to show -----------
    await narrow(browser, ctx, [[`/orgs/${ORG}/deployments`, '#targets li[data-target-id]'],
                                [`/orgs/${ORG}/deployments/${result.deployment_id}`,
                                 '#metrics tr[data-replica]']]);

    // --- the key rotated: the new key once; the old one refused (deploy.t) ------------------
    await page.goto(`${BASE}/orgs/${ORG}/deployments`);
    await page.locator('#targets li[data-target-id] button[data-action=rotate-key]').click();
    await page.waitForFunction((k) => {
        const t = document.getElementById('target-key-value')?.textContent;
        return t && t !== k;
    }, key1);
    const key2 = await text(page, '#target-key-value');
    check(/^svc_dek_\w+$/.test(key2) && key2 !== key1, 'the key is rotated: the new key is shown');
    result.key2 = key2;
    tell('key2', key2);
    await heard('rotated');
    await page.reload();
    await page.locator('#targets li[data-target-id]').waitFor();
    check(!(await page.evaluate(() => document.body.textContent)).includes(key2),
          '... once: not after a reload');
    await until(page, async () => await page.locator('#targets li .badge.online').count() === 1,
                'the target online with the new key');
    check(true, '... and the agent, given the new key, is back online');

    // --- removal refused while a deployment is on the target, then torn down and removed ----
    await page.click('#targets li[data-target-id] button[data-action=remove]');
    await page.locator('#problem').waitFor();
    const refused = await text(page, '#problem');
    check(/Request id: req_\w+/.test(refused) && /deployment/i.test(refused),
          'removing a target in use is refused: the detail and the request id', refused);
    await page.click(`#deployments li[data-deployment-id="${result.deployment_id}"] `
                     + 'button[data-action=teardown]');
    // No reload: the page follows the org's stream.
    await page.locator(`#deployments li[data-deployment-id="${result.deployment_id}"] `
                       + '.badge.torn_down').waitFor({ timeout: 60000 });
    check(true, 'the deployment is torn down from the list (by the agent), shown as it happens');
    await page.click('#targets li[data-target-id] button[data-action=remove]');
    await page.waitForFunction(() => !document.querySelector('#targets li[data-target-id]'));
    check((await text(page, '#status')).includes('removed'), 'the target is removed');
    await clean(page, page.seen, 'the deployments page');
    await axe(page, 'the deployments page');

    // --- filing an improvement, listed on the pipeline page ----------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/requests`);
    await page.locator('#new-improvement').waitFor();
    await axe(page, 'the pipeline with the improvement form');
    await page.selectOption('#new-improvement select[name=kind]', 'bug');
    await page.fill('#new-improvement input[name=title]', XSS);
    await page.fill('#new-improvement textarea[name=body]', 'It needs a /health page.\n');
    await page.click('#new-improvement button[type=submit]');
    const filed = page.locator('#improvements li[data-improvement-id]', { hasText: XSS });
    await filed.waitFor();
    result.improvement = await filed.getAttribute('data-improvement-id');
    check((await filed.textContent()).includes('user'),
          'an improvement is filed from the pipeline page and listed there, its title as text');
    check(await page.inputValue('#new-improvement input[name=title]') === '', '... the form emptied');
    await clean(page, page.seen, 'the pipeline');

    // --- 375 px wide ----------------------------------------------------------------------
    await narrow(browser, ctx, [[`/orgs/${ORG}/requests`, '#new-improvement']]);
    await ctx.close();
});
