// The page's elements and the few ways it shows things: a progress bar, a
// list of facts, the status line and the error box.

/** @param {string} id */
export function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}

/**
 * Shows a progress bar at `fraction` (0..1) with a label; `null` hides it.
 * @param {string} id
 * @param {number | null} fraction
 * @param {string} [label]
 */
export function setProgress(id, fraction, label = '') {
  const box = $(id);
  if (fraction === null) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  /** @type {HTMLElement} */ (box.querySelector('.bar')).style.width = `${Math.round(Math.min(1, Math.max(0, fraction)) * 1000) / 10}%`;
  /** @type {HTMLElement} */ (box.querySelector('.label')).textContent = label;
}

/**
 * Fills a <dl> with [term, value] pairs (an empty list hides it).
 * @param {string} id
 * @param {Array<[string, string]>} facts
 */
export function setFacts(id, facts) {
  const dl = $(id);
  dl.replaceChildren();
  for (const [term, value] of facts) {
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = value;
    dd.dataset.term = term;
    dl.append(dt, dd);
  }
  dl.hidden = facts.length === 0;
}

/** @param {string} text */
export function setStatus(text) {
  $('status').textContent = text;
}

/** @param {string} message */
export function showError(message) {
  const box = $('error');
  box.textContent = message;
  box.hidden = false;
}

export function clearError() {
  const box = $('error');
  box.textContent = '';
  box.hidden = true;
}

/** Lets the browser paint and handle input between two turns. */
export function nextFrame() {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** @param {number} n */
export function formatNumber(n) {
  return typeof n === 'bigint' ? n.toLocaleString('en-US') : Number(n).toLocaleString('en-US');
}
