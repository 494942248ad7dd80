// A `needs_input` run's page: its questions are answered here and sent to
// POST /api/runs/{id}/answers; the run then starts again (its page reloads to follow it).
(function () {
  'use strict';
  const form = document.getElementById('answers-form');
  if (!form) return;
  const api = '/api/runs/' + encodeURIComponent(document.body.dataset.run);
  const error = document.getElementById('answers-error');
  const show = (text) => {
    error.textContent = text;
    error.hidden = false;
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const answers = [];
    for (const input of form.querySelectorAll('input[name=answer]')) {
      const answer = input.value.trim();
      if (answer) answers.push({ question: input.dataset.question, answer });
    }
    if (!answers.length) {
      show('Answer at least one question.');
      return;
    }
    const button = document.getElementById('answers-send');
    button.disabled = true;
    let resp;
    try {
      resp = await fetch(api + '/answers', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ answers }),
      });
    } catch (e) {
      // Shown below as a refusal without a reason.
    }
    if (resp && resp.ok) {
      location.reload();
      return;
    }
    button.disabled = false;
    let why = 'the answers were refused';
    try {
      const body = await resp.json();
      why = [body.error].concat(body.problems || []).filter(Boolean).join(': ');
    } catch (e) {
      // No JSON body: the generic reason stays.
    }
    show(why);
  });
})();
