// t/ui/pipeline.mjs: the pipeline, members, teams, the code-hosting App's
// page and the audit log in a real headless Chromium (t/ui/lib.mjs).
// t/ui/pipeline.t prepares the data and runs it:
//
//   SVC_UI_ORG        an org the signed-in user owns, with a model provider
//                     (single-answer mode) whose fake answers the planning
//                     call, then the build run
//   SVC_UI_PROJECT    a project of it (slug)
//   SVC_UI_MEMBER     the name of another member (it is <img src=x onerror=alert(1)>)
//   SVC_UI_INVITEE    an address to invite
//   SVC_UI_INST       the login of the App installation the org has
//   SVC_UI_OWNER      the signed-in user's name
//   (the project has two open improvements: "Make it blue" and one titled
//   <img src=x onerror=alert(1)>)
//
// What pipeline.t checks afterwards goes to SVC_UI_RESULT (request_id,
// improvement_request, target_key).
import { BASE, XSS, result, check, newContext, watchedPage, axe, clean, text, signIn, run }
    from './lib.mjs';

const ORG = process.env.SVC_UI_ORG;
const PROJECT = process.env.SVC_UI_PROJECT;
const MEMBER = process.env.SVC_UI_MEMBER;
const INVITEE = process.env.SVC_UI_INVITEE;
const INST = process.env.SVC_UI_INST;
const OWNER = process.env.SVC_UI_OWNER;

async function stageIs(page, stage, timeout = 60000) {
    await page.waitForFunction((s) => document.getElementById('req-stage')?.textContent === s,
                               stage, { timeout });
}

// Clicks an action of the request page and waits for the page to show its effect.
async function action(page, id, stage, timeout) {
    await page.click(`#actions #${id}`);
    await stageIs(page, stage, timeout);
}

await run(async (browser) => {
    const ctx = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    const page = await watchedPage(ctx);
    await signIn(page, `/orgs/${ORG}`);
    check(true, 'signed in through the provider');
    check(await page.locator('nav.links a', { hasText: 'Pipeline' }).count() === 1,
          'the org home links the pipeline');

    // --- the pipeline: a new request ------------------------------------------------------
    await page.click('nav.links a:has-text("Pipeline")');
    await page.waitForURL(`${BASE}/orgs/${ORG}/requests`);
    await page.locator('#new-request').waitFor();
    check((await text(page, '#stage-intake')).includes('None'), 'the pipeline: no request yet');
    await axe(page, 'the pipeline (empty)');
    await page.selectOption('#new-request select[name=project]', PROJECT);
    await page.fill('#new-request input[name=title]', XSS);
    await page.fill('#new-request textarea[name=body]', 'A program that greets <b>people</b>.\n');
    await page.click('#new-request button[type=submit]');
    await page.waitForURL(/\/requests\/rqs_\w+$/);
    result.request_id = page.url().replace(/.*\//, '');
    await stageIs(page, 'intake');
    check(await text(page, 'main h1') === XSS, 'a request is created: its <img> title is text');
    check((await text(page, '#req-body')).includes('<b>people</b>'), '... its body is text too');
    check(await page.locator('#stage-track li[aria-current=step]').textContent() === 'intake',
          '... the stage track shows intake');
    await clean(page, page.seen, 'the new request');
    await axe(page, 'the request in intake');

    // A refusal: planning needs a section before review. Advance twice.
    // Someone else advances it (another tab): the page follows the org's
    // event stream and shows the new stage without a reload.
    await page.evaluate(() => { window.__sameDocument = true; });
    const other = await ctx.newPage();
    await other.goto(`${BASE}/orgs/${ORG}/requests`);
    const moved = await other.evaluate(async (u) => (await fetch(u, {
        method: 'POST', credentials: 'same-origin', headers: { Accept: 'application/json' } })).status,
        `/api/orgs/${ORG}/requests/${result.request_id}/advance`);
    check(moved === 200, 'advance from another tab: intake -> planning (the model drafted the '
          + 'table of contents)', moved);
    await stageIs(page, 'planning', 90000);
    check(await page.evaluate(() => window.__sameDocument === true),
          '... and the request\'s page shows planning without a reload (the org\'s event stream)');
    await other.close();
    check((await text(page, '#documents')).includes('toc'), '... the table of contents is listed');
    await page.click('#actions #advance');
    await page.locator('#problem').waitFor();
    const refused = await text(page, '#problem');
    check(/section/i.test(refused) && /product\.sections/.test(refused)
          && /Request id: req_\w+/.test(refused),
          'advancing without a section shows the problem, its field and request id', refused);
    await stageIs(page, 'planning');
    check(true, '... and the request stays in planning');
    await axe(page, 'the request with a refusal shown');

    await page.fill('#new-section input[name=title]', 'Greeting');
    await page.fill('#new-section textarea[name=body]', '# Greeting\n\nSays hello.\n');
    await page.click('#new-section button[type=submit]');
    await page.locator('#documents li', { hasText: 'Greeting' }).waitFor();
    check(true, 'a section is added from the request page');
    await action(page, 'advance', 'review');
    check(true, 'advance: planning -> review');
    for (let n = 0; n < 2; n++) {
        await page.locator('#documents button:has-text("Approve")').first().click();
        await page.waitForFunction((k) => document.querySelectorAll('#documents button').length === k,
                                   1 - n);
    }
    check(await page.locator('#documents .badge.approved').count() === 2,
          'both documents approved from the page');
    check(await page.locator('#documents a[href^="/orgs/"][href*="/documents/doc_"]').count() === 2,
          '... each linked to its document page');
    check(/USD/.test(await text(page, '#estimate-total')), 'the cost estimate is shown',
          await text(page, '#estimate-total'));
    await action(page, 'advance', 'build');
    check(true, 'advance: review -> build');
    check((await text(page, '#tasks')).includes('Greeting'), '... a build task for the section');
    check((await text(page, '#tasks')).includes('pending'), '... pending');
    await axe(page, 'the request in build');

    // Build: the task's run is real (the sandbox); the request moves on by itself.
    await page.click('#actions #run-all');
    await page.locator('#tasks a[href*="/runs/run_"]').waitFor();
    check(true, 'run-all: the task has a run, linked');
    await stageIs(page, 'integration', 180000);
    check(true, 'the run succeeded: the page followed the request into integration');
    check((await text(page, '#tasks')).includes('succeeded'), '... the task succeeded');
    check(/USD/.test(await text(page, '#estimate')), '... the usage next to the estimate');
    const runHref = await page.getAttribute('#tasks a[href*="/runs/run_"]', 'href');
    await action(page, 'approve-integration', 'done');
    check(await page.locator('#actions').count() === 0, 'integration approved: done, no action left');
    check((await text(page, '#history')).includes(OWNER), '... the history names who did it');
    await clean(page, page.seen, 'the request page');
    await axe(page, 'the request, done');
    await page.goto(BASE + runHref);
    await page.locator('#artifact').waitFor();
    check((await text(page, '#run-status')) === 'succeeded', 'the task\'s run page shows it succeeded');
    await page.goto(`${BASE}/orgs/${ORG}/requests`);
    await page.locator(`#stage-done li[data-request-id="${result.request_id}"]`).waitFor();
    check(true, 'the pipeline lists the request under done');
    await clean(page, page.seen, 'the pipeline');
    await axe(page, 'the pipeline');

    // --- improvements: one rejected, one approved (a request in intake) ---------------------
    check(await page.locator('#improvements li[data-improvement-id]').count() === 2,
          'the pipeline lists the two open improvements');
    const rej = page.locator('#improvements li', { hasText: 'Make it blue' });
    await rej.locator('input[name=reason]').fill('Not now.');
    await rej.locator('button:has-text("Reject")').click();
    await page.waitForFunction(() => /rejected/.test(document.getElementById('status').textContent));
    check(await page.locator('#improvements li[data-improvement-id]').count() === 1,
          'an improvement is rejected, with a reason');
    await page.locator('#improvements li', { hasText: XSS }).locator('button:has-text("Approve")').click();
    await page.waitForURL(/\/requests\/rqs_\w+$/);
    await stageIs(page, 'intake');
    result.improvement_request = page.url().replace(/.*\//, '');
    check(result.improvement_request !== result.request_id
          && (await text(page, 'main h1')) === XSS, 'another is approved: its request, in intake');
    await clean(page, page.seen, 'the request made from an improvement');
    await axe(page, 'the request made from an improvement');

    // --- members and invites ---------------------------------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/members`);
    await page.locator('#members li').first().waitFor();
    check((await text(page, '#members')).includes(MEMBER), 'members: an <img> name as text');
    check(await page.locator('#members li', { hasText: OWNER }).locator('button').count() === 0,
          '... the owner\'s row offers no change');
    await page.fill('#invite input[name=email]', INVITEE);
    await page.selectOption('#invite select[name=role]', 'member');
    await page.click('#invite button[type=submit]');
    await page.locator('#invites li', { hasText: INVITEE }).waitFor();
    check(true, 'an invite is made and listed');
    await page.fill('#invite input[name=email]', INVITEE);
    await page.click('#invite button[type=submit]');
    await page.locator('#problem').waitFor();
    check(/Request id: req_\w+/.test(await text(page, '#problem')),
          'inviting the address again: the refusal is shown', await text(page, '#problem'));
    const row = page.locator('#members li', { hasText: MEMBER });
    await row.locator('select').selectOption('admin');
    await row.locator('button:has-text("Change role")').click();
    await page.waitForFunction(() => /is now admin/.test(document.getElementById('status').textContent));
    check(await page.locator('#members li', { hasText: MEMBER }).locator('select').inputValue()
          === 'admin', 'a member\'s role is changed');
    await clean(page, page.seen, 'the members page');
    await axe(page, 'the members page');

    // --- a team -----------------------------------------------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/projects/${PROJECT}`);
    await page.click('nav.links a:has-text("Team")');
    await page.waitForURL(`${BASE}/orgs/${ORG}/projects/${PROJECT}/team`);
    await page.locator('#add-team-member').waitFor();
    await axe(page, 'the team page');
    await page.selectOption('#add-team-member select[name=user_id]', { label: MEMBER });
    await page.selectOption('#add-team-member select[name=role]', 'developer');
    await page.click('#add-team-member button[type=submit]');
    await page.locator('#team li', { hasText: MEMBER }).waitFor();
    check(await page.locator('#team li', { hasText: MEMBER }).locator('select').inputValue()
          === 'developer', 'a member is put on the project\'s team, as developer');
    await clean(page, page.seen, 'the team page');
    await axe(page, 'the team page with a member');

    // --- the code-hosting App ------------------------------------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/vcs`);
    await page.locator('#installations li').first().waitFor();
    check((await text(page, '#installations')).includes(INST), 'the installations are listed');
    check(await page.getAttribute('#install', 'href') === `/orgs/${ORG}/vcs/install`,
          '... and the page links the install route');
    const link = page.locator(`#repo-links li[data-project="${PROJECT}"]`);
    await link.locator('select').selectOption({ label: `${INST}/api` });
    await link.locator('button[type=submit]').click();
    await page.locator(`#repo-links li[data-project="${PROJECT}"] code.repo`).waitFor();
    check(await text(page, `#repo-links li[data-project="${PROJECT}"] code.repo`) === `${INST}/api`,
          'a repository is linked to the project');
    await clean(page, page.seen, 'the code-hosting page');
    await axe(page, 'the code-hosting page');

    // --- deployments: a target, its key shown once ---------------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/deployments`);
    await page.locator('#targets li').first().waitFor();
    await axe(page, 'the deployments page');
    await page.fill('#new-target input[name=name]', XSS);
    await page.click('#new-target button[type=submit]');
    await page.locator('#target-key-value').waitFor();
    result.target_key = await text(page, '#target-key-value');
    check(/^svc_dek_\w+$/.test(result.target_key), 'a deploy target is added: its key is shown');
    await page.locator('#targets li', { hasText: XSS }).locator('.badge.pending').waitFor();
    check(true, '... and it is listed, pending, its <img> name as text');
    await clean(page, page.seen, 'the deployments page');
    await page.reload();
    await page.locator('#targets li[data-target-id]').first().waitFor();
    check(!(await page.evaluate(() => document.body.textContent)).includes(result.target_key),
          '... and the key is not shown again');

    // --- billing: the plan, the usage, a budget ----------------------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/billing`);
    await page.locator('#budget').waitFor();
    check((await text(page, '#usage')).includes('Greeter'), 'billing: the usage by project');
    await axe(page, 'the billing page');
    await page.fill('#budget input[name=monthly_usd]', '50');
    await page.click('#budget button[type=submit]');
    await page.waitForFunction(() => / of 50 USD spent/.test(
        document.getElementById('budget-state').textContent));
    check(true, 'a monthly budget is set');
    await clean(page, page.seen, 'the billing page');

    // --- the audit log --------------------------------------------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/audit?limit=200`);
    await page.locator('#audit li[data-audit-id]').first().waitFor();
    const log = await text(page, '#audit');
    for (const a of ['request.created', 'request.stage_changed', 'request.integration_approved',
                     'invite.created', 'member.role_changed', 'team.member_added',
                     'project.repository.linked', 'improvement.rejected', 'improvement.approved',
                     'deploy_target.created', 'billing.budget.updated']) {
        check(log.includes(a), `the audit log shows ${a}`);
    }
    check((await text(page, '#audit li:has-text("invite.created") .audit-actor')) === OWNER,
          '... by its actor\'s name');
    await axe(page, 'the audit log');
    await page.fill('#audit-filter input[name=action]', 'invite.created');
    await page.click('#audit-filter button[type=submit]');
    await page.waitForFunction(() => [...document.querySelectorAll('#audit .audit-action')]
        .every((e) => e.textContent === 'invite.created'));
    check(await page.locator('#audit li[data-audit-id]').count() === 1,
          'filtered by action: the one invite');
    await page.goto(`${BASE}/orgs/${ORG}/audit?limit=3`);
    await page.locator('#audit li[data-audit-id]').first().waitFor();
    check(await page.locator('#audit li[data-audit-id]').count() === 3, 'three entries a page');
    const firstIds = await page.locator('#audit li[data-audit-id]').evaluateAll(
        (els) => els.map((e) => Number(e.dataset.auditId)));
    await page.click('#audit-more');
    await page.waitForFunction(() => document.querySelectorAll('#audit li[data-audit-id]').length === 6);
    const ids = await page.locator('#audit li[data-audit-id]').evaluateAll(
        (els) => els.map((e) => Number(e.dataset.auditId)));
    check(ids.every((id, i) => i === 0 || id < ids[i - 1]) && ids.slice(0, 3).join() === firstIds.join(),
          '"Older entries" follows the cursor: the next three, newest first', ids);
    await clean(page, page.seen, 'the audit log');

    // --- 375 px wide ------------------------------------------------------------------------------
    const phone = await newContext(browser, {
        viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
        storageState: await ctx.storageState(),
    });
    const small = await watchedPage(phone);
    for (const [p, sel] of [[`/orgs/${ORG}/requests`, '#stage-done li'],
                            [`/orgs/${ORG}/requests/${result.request_id}`, '#tasks li'],
                            [`/orgs/${ORG}/members`, '#members li'],
                            [`/orgs/${ORG}/projects/${PROJECT}/team`, '#team li'],
                            [`/orgs/${ORG}/vcs`, '#installations li'],
                            [`/orgs/${ORG}/audit`, '#audit li'],
                            [`/orgs/${ORG}/deployments`, '#targets li'],
                            [`/orgs/${ORG}/billing`, '#usage li']]) {
        await small.goto(BASE + p);
        await small.locator(sel).first().waitFor();
        const w = await small.evaluate(() => document.documentElement.scrollWidth);
        check(w <= 375, `375 px wide: ${p} needs no sideways scrolling`, w);
        await axe(small, `${p} at 375 px`);
        await clean(small, small.seen, `${p} at 375 px`);
    }
    await phone.close();
    await ctx.close();
});
