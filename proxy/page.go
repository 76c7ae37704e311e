package proxy

// statusPage is /_heed/: one self-contained page, no external assets, that
// polls status.json every second. Every value from the upstream is set as
// text, never as markup.
const statusPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>heed proxy</title>
<style>
:root { --bg:#f6f7f9; --fg:#1b1f24; --mut:#5b6470; --card:#fff; --bad:#b42318; --badbg:#fde8e6; --ok:#067647; --okbg:#e3f6ec; --line:#dde1e6; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--fg); }
header { padding:12px 16px; background:#1b1f24; color:#fff; }
header h1 { margin:0; font-size:18px; }
header p { margin:2px 0 0; color:#c9d1d9; font-size:13px; word-break:break-all; }
main { padding:12px; max-width:1100px; margin:auto; }
.cards { display:grid; grid-template-columns:repeat(auto-fit, minmax(140px, 1fr)); gap:8px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 12px; }
.card b { display:block; font-size:22px; }
.card span { color:var(--mut); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
section { margin-top:14px; }
h2 { font-size:15px; margin:0 0 6px; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; font-weight:600; }
.ok { background:var(--okbg); color:var(--ok); } .bad { background:var(--badbg); color:var(--bad); }
.list { background:var(--card); border:1px solid var(--line); border-radius:8px; }
.row { padding:8px 12px; border-top:1px solid var(--line); }
.row:first-child { border-top:0; }
.row.blocked { background:var(--badbg); }
.key { font-family:ui-monospace, Menlo, Consolas, monospace; font-size:13px; word-break:break-all; }
.meta { color:var(--mut); font-size:13px; }
.empty { padding:8px 12px; color:var(--mut); }
</style>
</head>
<body>
<header><h1>heed proxy <span id="ready" class="badge">…</span></h1><p id="where">loading…</p></header>
<main>
<div class="cards">
 <div class="card"><span>in flight</span><b id="inflight">–</b></div>
 <div class="card"><span>waiting</span><b id="waiting">–</b></div>
 <div class="card"><span>requests</span><b id="requests">–</b></div>
 <div class="card"><span>blocked scopes</span><b id="nblocked">–</b></div>
 <div class="card"><span>cache hit rate</span><b id="hitrate">–</b></div>
 <div class="card"><span>own answers</span><b id="own">–</b></div>
</div>
<section><h2>Blocks running</h2><div class="list" id="blocks"></div></section>
<section><h2>Recent throttles</h2><div class="list" id="throttles"></div></section>
<section><h2>Scopes and what heed learned</h2><div class="list" id="scopes"></div></section>
<section><h2>Proxy's own answers</h2><div class="list" id="answers"></div></section>
<p class="meta" id="updated"></p>
</main>
<script>
"use strict";
function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function secs(s) { s = Math.max(0, Math.round(s)); return s < 120 ? s + "s" : Math.round(s / 60) + "m"; }
function fill(id, items, render, none) {
  var box = document.getElementById(id); box.replaceChildren();
  if (!items.length) { box.appendChild(el("div", "empty", none)); return; }
  items.forEach(function (it) { box.appendChild(render(it)); });
}
function limitText(l, now) {
  var t = (l.name || l.dialect) + ": ";
  t += (l.remaining !== undefined ? l.remaining : "?") + (l.quota ? " of " + l.quota : "") + " left";
  if (l.window_seconds) t += " per " + secs(l.window_seconds);
  if (l.reset) t += ", resets in " + secs((Date.parse(l.reset) - now) / 1000);
  return t;
}
function render(s) {
  var now = Date.parse(s.now);
  document.body.dataset.polls = (+document.body.dataset.polls || 0) + 1;
  var r = document.getElementById("ready");
  r.textContent = s.ready ? "ready" : "not ready"; r.className = "badge " + (s.ready ? "ok" : "bad");
  document.getElementById("where").textContent = "→ " + s.upstream + " · store: " + s.store + (s.ready_error ? " · " + s.ready_error : "");
  document.getElementById("inflight").textContent = s.in_flight;
  document.getElementById("waiting").textContent = s.waiting;
  document.getElementById("requests").textContent = s.requests;
  var blocked = s.scopes.filter(function (x) { return x.blocked_for_seconds > 0; });
  document.getElementById("nblocked").textContent = blocked.length;
  document.getElementById("hitrate").textContent = s.cache ? Math.round(100 * s.cache_hit_rate) + "% (" + s.cache.entries + ")" : "off";
  var own = 0; Object.keys(s.answers).forEach(function (k) { own += s.answers[k]; });
  document.getElementById("own").textContent = own;
  fill("blocks", blocked, function (x) {
    var row = el("div", "row blocked");
    row.appendChild(el("div", "key", x.key));
    row.appendChild(el("div", "meta", "blocked " + secs(x.blocked_for_seconds) + " more · " + (x.block_reason || "no reason given") + (x.block_status ? " · upstream " + x.block_status : "")));
    return row;
  }, "No scope is blocked.");
  fill("throttles", s.throttles.slice(0, 10), function (x) {
    var row = el("div", "row");
    row.appendChild(el("div", "key", x.scope));
    row.appendChild(el("div", "meta", x.status + " " + (x.reason || "") + " · retry after " + secs(x.retry_after_seconds) + " · " + secs((now - Date.parse(x.at)) / 1000) + " ago"));
    return row;
  }, "No throttles yet.");
  fill("scopes", s.scopes.slice(0, 50), function (x) {
    var row = el("div", "row" + (x.blocked_for_seconds > 0 ? " blocked" : ""));
    row.appendChild(el("div", "key", x.key));
    var m = "tenant " + (x.tenant || "global") + " · " + x.throttles + " throttles · " + x.waits + " waits";
    if (x.blocked_for_seconds > 0) m += " · BLOCKED " + secs(x.blocked_for_seconds);
    row.appendChild(el("div", "meta", m));
    (x.limits || []).forEach(function (l) { row.appendChild(el("div", "meta", limitText(l, now))); });
    return row;
  }, "No scope seen yet.");
  fill("answers", Object.keys(s.answers).sort(), function (k) { return el("div", "row", k + ": " + s.answers[k]); }, "None: everything was forwarded.");
  document.getElementById("updated").textContent = "updated " + new Date(now).toLocaleTimeString();
}
function poll() {
  fetch("status.json", {cache: "no-store"}).then(function (r) { return r.json(); }).then(render)
    .catch(function (e) { document.getElementById("where").textContent = "status unavailable: " + e; })
    .finally(function () { setTimeout(poll, 1000); });
}
poll();
</script>
</body>
</html>
`
