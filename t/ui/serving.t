# The web UI is served by httpd itself (issue 26): index.html for the UI's
# own paths, its modules and style sheet under /ui/, with a strict
# Content-Security-Policy, nosniff and ETag revalidation; the service's
# paths are never shadowed by it. The three configurations that serve it
# (conf/svc.conf, make run's, this test server's) say the same. No file
# of the UI builds HTML from strings, so user content can only be text.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use LWP::UserAgent;

my $top = $ENV{SVC_TOP} // "$FindBin::Bin/../..";
my $ua = LWP::UserAgent->new(max_redirect => 0, timeout => 30);
my $base = base_url();
my $CSP = "default-src 'self'; base-uri 'none'; object-src 'none'; form-action 'self'; "
        . "frame-ancestors 'none'";

sub slurp {
    open my $fh, '<:raw', $_[0] or die "$_[0]: $!";
    local $/;
    return scalar <$fh>;
}
my $index = slurp("$top/ui/index.html");
my $type_js = qr{^text/javascript;\s*charset=utf-8$}i;

# --- the page, for each of the UI's paths --------------------------------------
for my $p ('/', '/tokens', '/orgs/acme', '/orgs/acme/projects/web',
           '/orgs/acme/projects/web/runs/run_abc', '/orgs/acme/vcs',
           '/orgs/acme/deployments/dep_abc') {
    my $res = $ua->get("$base$p");
    is($res->code, 200, "GET $p: 200");
    is($res->content, $index, '... the UI\'s index.html');
    like($res->header('Content-Type'), qr{^text/html;\s*charset=utf-8$}i, '... text/html, UTF-8');
    is($res->header('Content-Security-Policy'), $CSP, '... the strict CSP');
    is($res->header('X-Content-Type-Options'), 'nosniff', '... nosniff');
    is($res->header('Referrer-Policy'), 'same-origin', '... no referrer to other origins');
    is($res->header('Cache-Control'), 'no-cache', '... revalidated on every use');
    is($res->header('Cross-Origin-Opener-Policy'), 'same-origin', '... its own browsing context');
}

# --- the share portal's page: no Referer ever carries its token --------------------------
{
    my $res = $ua->get("$base/share/svc_shr_notarealtoken");
    is($res->code, 200, 'GET /share/:token: 200');
    is($res->content, $index, '... the UI\'s index.html');
    is($res->header('Content-Security-Policy'), $CSP, '... the strict CSP');
    is($res->header('Referrer-Policy'), 'no-referrer', '... and no referrer at all');
    is($ua->get("$base/share/a/b")->code, 404, '/share/a/b is no page of the UI');
}

# --- Markdown and its sanitizer: the distribution's copies ------------------------------------
for my $v (['marked.js', '/usr/share/javascript/marked/marked.min.js'],
           ['purify.js', '/usr/share/nodejs/dompurify/dist/purify.min.js']) {
    my $res = $ua->get("$base/ui/vendor/$v->[0]");
    is($res->code, 200, "GET /ui/vendor/$v->[0]: 200");
    is($res->content, slurp($v->[1]), "... $v->[1]");
    like($res->header('Content-Type') // '', $type_js, '... a script');
    is($res->header('X-Content-Type-Options'), 'nosniff', '... nosniff');
    is($res->header('Cache-Control'), 'no-cache', '... revalidated');
}
like($index, qr{<script src="/ui/vendor/marked\.js"></script>\s*<script src="/ui/vendor/purify\.js"></script>\s*<script type="module"},
     'index.html loads them before the modules');

# --- the assets ------------------------------------------------------------------
my %type = (js => $type_js, css => qr{^text/css;\s*charset=utf-8$}i);
opendir my $dh, "$top/ui/js" or die $!;
my @assets = ('app.css', map { "js/$_" } sort grep { /\.js$/ } readdir $dh);
ok(@assets >= 5, scalar(@assets) . ' assets');
for my $a (@assets) {
    my $res = $ua->get("$base/ui/$a");
    is($res->code, 200, "GET /ui/$a: 200");
    is($res->content, slurp("$top/ui/$a"), '... the file');
    my ($ext) = $a =~ /\.(\w+)$/;
    like($res->header('Content-Type') // '', $type{$ext}, "... ${ext}'s type (module scripts need it)");
    is($res->header('X-Content-Type-Options'), 'nosniff', '... nosniff');
    my $etag = $res->header('ETag');
    ok($etag, '... with an ETag');
    my $again = $ua->get("$base/ui/$a", 'If-None-Match' => $etag);
    is($again->code, 304, '... and 304 when it has not changed');
}
is($ua->get("$base/ui/js/nothing.js")->code, 404, 'an asset that does not exist: 404');
{
    # Options None: no listing. (With mod_dir and mod_autoindex loaded, as on
    # Debian, httpd refuses it with 403 and logs AH01276 at error level.)
    my $mark = expect_errors_begin();
    my $dir = $ua->get("$base/ui/");
    expect_errors_end($mark);
    like($dir->code, qr/^40[34]$/, 'no directory listing of /ui/: ' . $dir->code);
    unlike($dir->content, qr/Index of/, '... no index');
}

# --- the service's paths stay the module's ----------------------------------------
{
    my ($st, $doc, $res) = api(GET => '/api/me');
    is($st, 401, '/api/me: the module\'s 401');
    unlike($res->content, qr/<html/i, '... not the page');
    my $inst = $ua->get("$base/orgs/acme/vcs/install");
    isnt($inst->content, $index, '/orgs/:slug/vcs/install is the module\'s, not the page');
    like($inst->header('X-Request-Id') // '', qr/^req_/, '... answered by the module');
    my $login = $ua->get("$base/auth/login?return_to=/tokens");
    is($login->code, 302, '/auth/login: the module\'s redirect to the provider');
    for my $p ('/webhooks/vcs', '/internal/health', '/admin/vcs-app/setup') {
        my $r = $ua->get("$base$p");
        isnt($r->content, $index, "$p: not the page");
        like($r->header('X-Request-Id') // '', qr/^req_/, '... the module answered');
    }
    is($ua->get("$base/orgs")->code, 404, '/orgs alone is no page of the UI');
}

# --- the configurations agree -------------------------------------------------------
sub ui_block {
    my ($file, $dir) = @_;
    my $s = slurp($file);
    my ($b) = $s =~ /^(Alias \/ui\/.*?^<\/Directory>)$/ms or return undef;
    $b =~ s/\Q$dir\E/UIDIR/g;
    $b =~ s/\\\$/\$/g;          # tools/run.sh writes it through a here-document
    return $b;
}
my $packaged = ui_block("$top/conf/svc.conf", '/usr/share/mod_svc/ui');
ok($packaged, 'conf/svc.conf serves the UI from /usr/share/mod_svc/ui');
is(ui_block("$top/t/conf/extra.conf.in", '@ServerRoot@/../ui'), $packaged,
   'the test server serves it as the packaged configuration does');
is(ui_block("$top/tools/run.sh", '$TOP/ui'), $packaged, '... and so does make run');
like(slurp("$top/packaging/deb/svc.load"), qr/^# Depends: dbd alias headers mime$/m,
     'a2enmod svc enables mod_alias, mod_headers and mod_mime with it');

# --- nothing builds HTML from strings ---------------------------------------------------
unlike($index, qr/<script(?![^>]*\bsrc=)[^>]*>/i, 'index.html: no inline script');
unlike($index, qr/\bstyle\s*=|<style/i, '... no inline style');
# Markdown is the one markup from users: marked's output goes through
# DOMPurify, which hands back nodes (RETURN_DOM_FRAGMENT), in one place.
my @marked = grep { slurp("$top/ui/$_") =~ /\bmarked\b/ } grep { /\.js$/ } @assets;
is_deeply(\@marked, ['js/markdown.js'], 'marked is used in js/markdown.js only');
my $md = slurp("$top/ui/js/markdown.js");
my @parse = $md =~ /(.*marked\.parse.*)/g;
is(scalar @parse, 1, '... once');
like($parse[0] // '', qr/DOMPurify\.sanitize\(window\.marked\.parse\(/, '... its output sanitized at once');
like($md, qr/RETURN_DOM_FRAGMENT: true/, '... into nodes, not a string');
for my $a (grep { /\.js$/ } @assets) {
    my $js = slurp("$top/ui/$a");
    unlike($js, qr/\b(?:innerHTML|outerHTML|insertAdjacentHTML|document\.write)\b|\beval\s*\(|\bnew Function\b/,
           "$a: builds no HTML from strings and evaluates no code");
    unlike($js, qr/\.style\b|setAttribute\(\s*['"]style/, "$a: sets no inline style");
}

done_testing();
