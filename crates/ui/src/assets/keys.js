// Keys. Lists (runs, a run's timeline): j/↓ and k/↑ move a cursor over the
// rows, Enter or o opens the row. Event page: j/→ next event, k/← previous,
// n next tool call, p previous tool call, f the fork form. Anywhere: "/"
// the text filter, d the diff form; Ctrl+Enter in a text box submits it.
(function () {
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
    if (t === 'INPUT' || t === 'TEXTAREA' || t === 'SELECT' || e.ctrlKey || e.metaKey || e.altKey) return;
    var stepping = !!document.getElementById('next') || !!document.getElementById('prev');
    var handled = true;
    if (e.key === '/') { var q = document.getElementById('f-q'); if (q) q.focus(); else handled = false; }
    else if (e.key === 'f' && document.getElementById('respond')) { document.getElementById('respond').focus(); }
    else if (e.key === 'd' && document.getElementById('diff')) { document.getElementById('diff').click(); }
    else if (stepping && (e.key === 'j' || e.key === 'ArrowRight')) { handled = go('next'); }
    else if (stepping && (e.key === 'k' || e.key === 'ArrowLeft')) { handled = go('prev'); }
    else if (stepping && e.key === 'n') { handled = go('next-tool'); }
    else if (stepping && e.key === 'p') { handled = go('prev-tool'); }
    else if (!stepping && (e.key === 'j' || e.key === 'ArrowDown')) { var l = rows(); if (l.length) mark(l, cur + 1); else handled = false; }
    else if (!stepping && (e.key === 'k' || e.key === 'ArrowUp')) { var m = rows(); if (m.length) mark(m, cur - 1); else handled = false; }
    else if (!stepping && (e.key === 'Enter' || e.key === 'o') && cur >= 0) { var r = rows()[cur]; if (r) window.location.href = r.getAttribute('data-href'); }
    else handled = false;
    if (handled) e.preventDefault();
  });
})();
