// Keys. Lists (runs, a run's timeline): j/↓ and k/↑ move a cursor over the
// rows, Enter or o opens the row. Event page: j/→ next event, k/← previous,
// n next tool call, p previous tool call, f the fork form; m / M the
// next / previous model call (run and event pages). Anywhere: "/"
// the text filter, d the diff form, ? the key help (Esc closes it), r
// shows or hides the runtime's own events; Ctrl+Enter in a text box
// submits it.
(function () {
  function noise(show) {
    var t = document.getElementById('timeline'), box = document.getElementById('show-noise');
    if (!t || !box) return false;
    if (show === undefined) show = !box.checked;
    box.checked = show;
    t.classList.toggle('hide-noise', !show);
    return true;
  }
  var box = document.getElementById('show-noise');
  if (box) box.addEventListener('change', function () { noise(box.checked); });
  function help(show) {
    var h = document.getElementById('help');
    if (!h) return false;
    h.hidden = show === undefined ? !h.hidden : !show;
    return true;
  }
  var cur = -1;
  function rows() {
    return Array.prototype.filter.call(document.querySelectorAll('tr[data-href]'), function (r) { return r.offsetParent !== null; });
  }
  function mark(list, i) {
    if (list[cur]) list[cur].classList.remove('cur');
    cur = Math.max(0, Math.min(list.length - 1, i));
    list[cur].classList.add('cur');
    list[cur].scrollIntoView({block: 'nearest'});
  }
  function go(id) {
    var a = document.getElementById(id);
    if (a && a.href) { window.location.href = a.href; return true; }
    return false;
  }
  document.addEventListener('keydown', function (e) {
    var t = e.target && e.target.tagName;
    if (e.key === 'Enter' && e.ctrlKey && t === 'TEXTAREA' && e.target.form) {
      e.preventDefault(); e.target.form.requestSubmit(); return;
    }
    var typing = (t === 'INPUT' && e.target.type !== 'checkbox') || t === 'TEXTAREA' || t === 'SELECT';
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    var stepping = !!document.getElementById('next') || !!document.getElementById('prev');
    var handled = true;
    if (e.key === '?') { help(); }
    else if (e.key === 'Escape') { handled = help(false); }
    else if (e.key === 'r' && !stepping) { handled = noise(); }
    else if (e.key === '/') { var q = document.getElementById('f-q') || document.getElementById('find'); if (q) q.focus(); else handled = false; }
    else if (e.key === 'f' && document.getElementById('respond')) { document.getElementById('respond').focus(); }
    else if (e.key === 'd' && document.getElementById('diff')) { document.getElementById('diff').click(); }
    else if (stepping && (e.key === 'j' || e.key === 'ArrowRight')) { handled = go('next'); }
    else if (stepping && (e.key === 'k' || e.key === 'ArrowLeft')) { handled = go('prev'); }
    else if (e.key === 'm') { handled = go('next-model'); }
    else if (e.key === 'M') { handled = go('prev-model'); }
    else if (stepping && e.key === 'n') { handled = go('next-tool'); }
    else if (stepping && e.key === 'p') { handled = go('prev-tool'); }
    else if (!stepping && (e.key === 'j' || e.key === 'ArrowDown')) { var l = rows(); if (l.length) mark(l, cur + 1); else handled = false; }
    else if (!stepping && (e.key === 'k' || e.key === 'ArrowUp')) { var m = rows(); if (m.length) mark(m, cur - 1); else handled = false; }
    else if (!stepping && (e.key === 'Enter' || e.key === 'o') && cur >= 0) { var r = rows()[cur]; if (r) window.location.href = r.getAttribute('data-href'); }
    else handled = false;
    if (handled) e.preventDefault();
  });
})();
