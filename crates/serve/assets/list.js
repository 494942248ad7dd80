'use strict';
// The runs list: /api/runs every two seconds, rendered with textContent only (topics are
// model or user text).
(function () {
  const body = document.querySelector('#runs tbody');

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return Math.round(ms) + ' ms';
    const s = ms / 1000;
    if (s < 120) return s.toFixed(1) + ' s';
    return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
  }

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function render(runs) {
    const rows = [];
    for (const r of runs) {
      const tr = document.createElement('tr');
      tr.dataset.run = r.id;
      const name = cell(tr, '', 'topic');
      const a = document.createElement('a');
      a.href = '/runs/' + encodeURIComponent(r.id);
      a.textContent = r.topic ? r.topic + ' (' + r.id + ')' : r.id;
      name.appendChild(a);
      const st = cell(tr, '');
      const badge = document.createElement('span');
      badge.className = 'badge ' + r.status;
      badge.textContent = r.status;
      st.appendChild(badge);
      if (r.worker) {
        // Over the queue (serve --nats): the worker that has (or had) the run.
        const w = document.createElement('small');
        w.className = 'muted worker';
        w.textContent = ' on ' + r.worker + (r.deliveries > 1 ? ' (delivery ' + r.deliveries + ')' : '');
        st.appendChild(w);
      }
      const ended = r.completed + r.failed + r.blocked;
      cell(tr, r.tasks ? ended + ' / ' + r.tasks + (r.failed ? ' (' + r.failed + ' failed)' : '') : '–');
      cell(tr, r.tokens ? r.tokens.toLocaleString() : '–');
      cell(tr, r.cost !== null && r.cost !== undefined
        ? r.cost.toFixed(4) + ' ' + (r.currency || '') + (r.unpriced ? ' + unpriced' : '')
        : (r.unpriced ? 'unpriced' : '–'));
      cell(tr, r.started_at ? new Date(r.started_at).toLocaleString() : '–');
      cell(tr, fmtMs(r.duration_ms));
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    document.getElementById('empty').hidden = runs.length > 0;
    document.getElementById('count').textContent = runs.length + ' runs';
  }

  async function refresh() {
    try {
      const resp = await fetch('/api/runs', { headers: { Accept: 'application/json' } });
      if (resp.ok) render((await resp.json()).runs);
    } catch (e) {
      // The server restarting: the next round tries again.
    }
    setTimeout(refresh, 2000);
  }
  refresh();
})();
