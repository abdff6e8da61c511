// t/ui/docs.mjs: the web UI's model providers, planning documents and share
// portal in a real headless Chromium, against the Apache::Test server;
// t/ui/docs.t prepares the data, runs it and checks afterwards what it did:
//
//   SVC_UI_URL       the UI's server          SVC_UI_CHROMIUM  the chromium
//   SVC_UI_ORG       an org the user owns     SVC_UI_PROJECT   a project of it
//   SVC_UI_LLM_URL   the fake model (t/lib/FakeLLM.pm), its key SVC_UI_LLM_KEY
//   SVC_UI_RESULT    a file to write what docs.t checks afterwards
//
// One TAP-like line per check; exits 1 when any failed.
import { BASE, XSS, CSP, result, check, newContext, watchedPage, axe, clean, text, signIn, run,
         ready, statusIs } from './lib.mjs';

const ORG = process.env.SVC_UI_ORG;
const PROJECT = process.env.SVC_UI_PROJECT;
const LLM = process.env.SVC_UI_LLM_URL;
const BODY = '# Payments\n\nCards **only**.\n\n<script>window.__svcPwned=1</script>\n\n'
           + '<img src="nope.png" onerror="window.__svcPwned=2"> '
           + '[a link](javascript:window.__svcPwned=3)\n';
const A_TEXT = '# Payments\n\nCards and *vouchers*, from editor A.\n';
const B_TEXT = '# Payments\n\nCards and bank transfers, from editor B.\n';
const REGEN = '# Payments\n\nCards and bank transfers.\n\nThe model made it clear.\n';
const PATCHED = REGEN + '\n## Refunds\n\nWithin 30 days.\n';

// The fake model's next answers (its control endpoint).
async function modelWillSay(...replies) {
    const res = await fetch(`${LLM}/_control`, { method: 'POST', body: JSON.stringify({ replies }),
                                                 headers: { 'Content-Type': 'application/json' } });
    check(res.ok, `the fake model takes its next answer${replies.length > 1 ? 's' : ''}`);
}

// Nothing the document's text carries ran or stayed: no script, no event
// handler, no javascript: link in the rendered text.
async function sanitized(page, name) {
    const s = await page.evaluate(() => {
        const b = document.getElementById('doc-body') || document.querySelector('.markdown');
        return { scripts: b.querySelectorAll('script').length,
                 handlers: [...b.querySelectorAll('*')].filter((e) =>
                     [...e.attributes].some((a) => /^on/i.test(a.name))).length,
                 js: b.querySelectorAll('[href^="javascript" i], [src^="javascript" i]').length,
                 strong: b.querySelector('strong')?.textContent ?? null };
    });
    check(s.scripts === 0 && s.handlers === 0 && s.js === 0,
          `${name}: the sanitized text has no script, no on* handler, no javascript: link`, s);
    return s;
}

await run(async (browser) => {
    const ctx = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    const page = await watchedPage(ctx);

    // --- a model provider, added and tested ------------------------------------------------
    await signIn(page, `/orgs/${ORG}/providers`);
    await ready(page, '#providers li');
    await axe(page, 'the providers page');
    await page.fill('#new-provider input[name=name]', 'Fake model');
    await page.selectOption('#new-provider select[name=kind]', 'openai');
    await page.fill('#new-provider input[name=base_url]', LLM);
    await page.fill('#new-provider input[name=model]', 'gpt-4o-mini');
    await page.fill('#new-provider input[name=api_key]', process.env.SVC_UI_LLM_KEY);
    await page.click('#new-provider button[type=submit]');
    const row = page.locator('#providers li[data-provider-id]', { hasText: 'Fake model' });
    await row.waitFor();
    check(await row.locator('.badge.default').count() === 1,
          'a provider is added; the org\'s first one is its default');
    check(await page.inputValue('#new-provider input[name=api_key]') === ''
          && !(await text(page, '#providers')).includes(process.env.SVC_UI_LLM_KEY),
          '... and its key is shown nowhere');
    await row.locator('button', { hasText: 'Test' }).click();
    await row.locator('.test-result').waitFor();
    const tested = await text(row, '.test-result');
    check(/Works/.test(tested) && /gpt-4o-mini/.test(tested), 'testing it: it works, its models listed',
          tested);
    await clean(page, page.seen, 'the providers page');
    await axe(page, 'the providers page with a test result');

    // --- a product and a document with hostile markup ---------------------------------------
    await page.goto(`${BASE}/orgs/${ORG}/projects/${PROJECT}`);
    await page.click('a:text("Planning documents")');
    await page.waitForURL(`${BASE}/orgs/${ORG}/projects/${PROJECT}/products`);
    await ready(page, '#products li');
    await axe(page, 'the planning page');
    await page.fill('#new-product input[name=name]', 'Checkout');
    await page.click('#new-product button[type=submit]');
    await page.waitForURL(/\/orgs\/[^/]+\/products\/prd_\w+$/);
    const productUrl = page.url();
    result.product_id = productUrl.replace(/.*\//, '');
    await ready(page, '#documents li');
    await axe(page, 'a product\'s page');
    await page.fill('#new-document input[name=title]', XSS);
    await page.fill('#new-document textarea[name=body]', BODY);
    await page.click('#new-document button[type=submit]');
    await page.waitForURL(/\/orgs\/[^/]+\/documents\/doc_\w+$/);
    const docUrl = page.url();
    result.document_id = docUrl.replace(/.*\//, '');
    await ready(page, '#doc-body h1');
    check(await text(page, 'main h1') === XSS, 'a document is created; its <img> title is text');
    const s = await sanitized(page, 'the document');
    check(s.strong === 'only', '... and its Markdown is rendered (bold is <strong>)', s.strong);
    const shown = await text(page, '#doc-body');
    check(shown.includes('<script>window.__svcPwned=1</script>') && shown.includes('onerror='),
          '... the HTML written in it shown as text', shown);
    await clean(page, page.seen, 'the document page');
    await axe(page, 'the document page');

    // --- two editors at once: the second gets the conflict and keeps its text ---------------
    const other = await watchedPage(ctx);
    await other.goto(docUrl);
    await ready(other, '#doc-body h1');
    await page.fill('#edit-body', A_TEXT);
    await page.click('#edit button[type=submit]');
    await statusIs(page, /Saved as version 2/);
    check(true, 'the first editor saves version 2');
    await other.fill('#edit-body', B_TEXT);
    await other.click('#edit button[type=submit]');
    await other.locator('#problem').waitFor();
    await ready(other, '#edit-conflict pre.diff');
    const conflictText = await text(other, '#problem');
    check(/Request id: req_\w+/.test(conflictText), 'the second editor sees the conflict (409) and its '
          + 'request id', conflictText);
    check(await other.inputValue('#edit-body') === B_TEXT, '... keeps their text in the editor');
    check((await text(other, '#doc-body')).includes('from editor A'),
          '... and sees the version written meanwhile');
    check(await other.locator('#edit-conflict pre.diff .add').count() > 0,
          '... with how their text differs from it');
    await axe(other, 'the document page after a conflict');
    await other.click('#edit button[type=submit]');
    await statusIs(other, /Saved as version 3/);
    check((await text(other, '#doc-body')).includes('from editor B'),
          'saved again: their text is version 3');
    await clean(other, other.seen, 'the second editor\'s page');
    await other.close();

    // --- approve -----------------------------------------------------------------------------
    await page.reload();
    await ready(page, '#approve');
    check((await text(page, '#approve')).includes('3'), 'the first page, reloaded, offers to approve v3');
    await page.click('#approve');
    await statusIs(page, /Version 3 approved/);
    check(await page.locator('#doc-facts .badge.approved').count() === 1, 'approved: the page says so');

    // --- regenerate, then a patch accepted ----------------------------------------------------
    await modelWillSay(JSON.stringify({ body: REGEN }));
    await page.fill('#regenerate input[name=instructions]', 'Make it clear.');
    await page.click('#regenerate button[type=submit]');
    await statusIs(page, /The model wrote version 4/);
    check((await text(page, '#doc-body')).includes('The model made it clear.'),
          'regenerated: the model\'s text is version 4');
    check(await page.inputValue('#edit-body') === REGEN, '... and the unchanged editor follows it');
    await modelWillSay(JSON.stringify({ body: PATCHED, summary: 'Adds a section on refunds.' }));
    await page.fill('#new-patch input[name=instructions]', 'Add refunds.');
    await page.click('#new-patch button[type=submit]');
    const patch = page.locator('#patches li[data-patch-id]').first();
    await patch.waitFor();
    check((await text(patch, 'strong')) === 'Adds a section on refunds.', 'a patch is proposed');
    check((await patch.locator('pre.diff .add').allTextContents()).some((l) => l.includes('Within 30 days')),
          '... shown as a diff: its added lines marked');
    await axe(page, 'the document page with a patch');
    await patch.locator('button', { hasText: 'Accept' }).click();
    await statusIs(page, /Patch accepted/);
    await page.locator('#patches .badge.accepted').waitFor();
    check((await text(page, '#doc-body')).includes('Within 30 days'), 'accepted: the text has it (v5)');
    result.patch_accepted = true;

    // --- a diff between any two versions --------------------------------------------------------
    const ids = await page.evaluate(() => [...document.querySelectorAll('#versions li')]
        .map((li) => li.dataset.versionId));
    check(ids.length === 5, 'five versions are listed', ids.length);
    await page.selectOption('#diff-from', ids[4]);
    await page.selectOption('#diff-to', ids[1]);
    await page.click('#compare button[type=submit]');
    await ready(page, '#diff pre.diff');
    const del = (await page.locator('#diff .del').allTextContents()).join('\n');
    const add = (await page.locator('#diff .add').allTextContents()).join('\n');
    check(del.includes('Cards **only**.') && add.includes('The model made it clear.')
          && !add.includes('Within 30 days'),
          'v1 against v4: the lines removed and added between them', { del, add });
    await clean(page, page.seen, 'the document page after the model');

    // --- a share link, opened by someone without an account -------------------------------------
    await page.goto(productUrl);
    await ready(page, '#shares li');
    await page.click('#new-share button[type=submit]');
    await ready(page, '#share-url');
    const shareUrl = await page.getAttribute('#share-url', 'href');
    result.share_token = shareUrl.replace(/.*\//, '');
    check(/^svc_shr_\w+$/.test(result.share_token) && shareUrl.startsWith(`${BASE}/share/`),
          'a share link is created; its URL is the portal\'s page');
    check(await page.locator('#shares li .badge.active').count() === 1, '... and listed, active');
    await axe(page, 'a product\'s page with a share link');
    await clean(page, page.seen, 'the product page');

    const guest = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    check((await guest.cookies()).length === 0, 'a fresh browser context: no cookies');
    const portal = await watchedPage(guest);
    const res = await portal.goto(shareUrl);
    check(res.status() === 200, 'the portal\'s page loads without an account');
    check(res.headers()['referrer-policy'] === 'no-referrer', '... with Referrer-Policy: no-referrer',
          res.headers()['referrer-policy']);
    check(res.headers()['content-security-policy'] === CSP, '... and the strict CSP');
    await ready(portal, '.shared-doc .markdown h1');
    check(await text(portal, 'main h1') === 'Checkout', '... the product\'s name');
    check((await text(portal, '.shared-doc h2')) === XSS
          && (await text(portal, '.shared-doc .markdown')).includes('from editor B'),
          '... its document, the approved version (v3), the <img> title as text');
    await sanitized(portal, 'the portal');
    await axe(portal, 'the share portal');
    await portal.fill('input[name=author_name]', 'Rita Reviewer');
    await portal.fill('.comment-form textarea', `Bank transfers? ${XSS}`);
    await portal.click('.comment-form button[type=submit]');
    await statusIs(portal, /comment was sent/);
    check((await text(portal, '.comments li')).includes(`Bank transfers? ${XSS}`),
          'a comment is added in the portal; shown as text');
    await clean(portal, portal.seen, 'the share portal');
    const small = await newContext(browser, { viewport: { width: 375, height: 740 }, isMobile: true,
                                              hasTouch: true, deviceScaleFactor: 2 });
    const phonePortal = await watchedPage(small);
    await phonePortal.goto(shareUrl);
    await ready(phonePortal, '.shared-doc .markdown h1');
    // Another reviewer (another browser, the same link) reads Rita's comment.
    await ready(phonePortal, '.comments li[data-comment-id]');
    const others = await text(phonePortal, '.comments');
    check(others.includes('Rita Reviewer') && others.includes(`Bank transfers? ${XSS}`),
          'another reviewer with the link sees the comment, as text', others);
    check(await phonePortal.evaluate(() => document.documentElement.scrollWidth) <= 375,
          '375 px wide: the portal needs no sideways scrolling');
    await axe(phonePortal, 'the share portal at 375 px');
    await clean(phonePortal, phonePortal.seen, 'the share portal at 375 px');
    await small.close();
    await guest.close();

    // --- the comment, back in the signed-in page --------------------------------------------------
    await page.goto(docUrl);
    await ready(page, '#comments li');
    const comments = await text(page, '#comments');
    check(comments.includes('Rita Reviewer') && comments.includes(`Bank transfers? ${XSS}`)
          && comments.includes('on v3'), 'the signed-in page lists the comment, on v3, as text', comments);
    await clean(page, page.seen, 'the document page with a comment');

    // --- revoking the link: the portal refuses it at once ----------------------------------------
    await page.goto(productUrl);
    await ready(page, '#shares li button.danger');
    await page.click('#shares li button.danger');
    await statusIs(page, /Share link revoked/);
    check(await page.locator('#shares li .badge.revoked').count() === 1
          && await page.locator('#shares li button').count() === 0,
          'the share link is revoked: the list says so, and offers no second revoke');
    const late = await newContext(browser);
    const latePage = await watchedPage(late);
    await latePage.goto(shareUrl);
    await ready(latePage, '#problem');
    const refused = await text(latePage, '#problem');
    check(/no such share link/i.test(refused), 'the portal refuses the revoked link', refused);
    await late.close();

    // --- 375 px wide -----------------------------------------------------------------------------
    const phone = await newContext(browser, {
        viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
        storageState: await ctx.storageState(),
    });
    const p375 = await watchedPage(phone);
    for (const [p, sel] of [[`/orgs/${ORG}/providers`, '#providers li'],
                            [`/orgs/${ORG}/projects/${PROJECT}/products`, '#products li'],
                            [new URL(productUrl).pathname, '#shares li'],
                            [new URL(docUrl).pathname, '#comments li']]) {
        await p375.goto(BASE + p);
        await ready(p375, sel);
        const w = await p375.evaluate(() => document.documentElement.scrollWidth);
        check(w <= 375, `375 px wide: ${p} needs no sideways scrolling`, w);
        await axe(p375, `${p} at 375 px`);
        await clean(p375, p375.seen, `${p} at 375 px`);
    }
    await phone.close();

    // --- keyboard: a document's actions are reachable by Tab ----------------------------------------
    await page.goto(docUrl);
    await ready(page, '#doc-body h1');
    let reached = false;
    for (let i = 0; i < 60 && !reached; i++) {
        await page.keyboard.press('Tab');
        reached = await page.evaluate(() => document.activeElement?.id === 'edit-body');
    }
    check(reached, 'keyboard: Tab reaches the editor');
    await ctx.close();
});
