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
  box.classList.remove('failed');
  /** @type {HTMLElement} */ (box.querySelector('.bar')).style.width = `${Math.round(Math.min(1, Math.max(0, fraction)) * 1000) / 10}%`;
  /** @type {HTMLElement} */ (box.querySelector('.label')).textContent = label;
}

/**
 * Marks a progress bar as ended in failure, with a label saying so (the
 * error box says why).
 * @param {string} id
 * @param {string} label
 */
export function failProgress(id, label) {
  setProgress(id, 0, label);
  $(id).classList.add('failed');
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

/** When `letPaint` last let the page paint. */
let painted = 0;

/**
 * In a loop that shows many things at once: lets the browser paint what
 * it has shown, at most every 50 ms, so it is seen as it goes (a hidden
 * page paints nothing: it only yields).
 */
export async function letPaint() {
  if (performance.now() - painted < 50) return;
  await new Promise((resolve) => (document.hidden ? setTimeout(resolve, 0) : requestAnimationFrame(() => setTimeout(resolve, 0))));
  painted = performance.now();
}

/**
 * Brings `el` into view when it is not (once, when a run starts: the page
 * does not follow it after that).
 * @param {HTMLElement} el
 */
export function bringIntoView(el) {
  const box = el.getBoundingClientRect();
  if (box.top >= 0 && box.top < window.innerHeight * 0.5) return;
  el.scrollIntoView({ block: 'start', behavior: 'smooth' });
}


/**
 * Selects the model panel's tab `name` (its button and its panel): what
 * a click does, and what the page does when a model comes from elsewhere.
 * @param {string} name `artifact`, `checkpoint` or `address`
 */
export function showTab(name) {
  for (const t of document.querySelectorAll('.tabs button')) t.setAttribute('aria-selected', String(/** @type {HTMLElement} */ (t).dataset.tab === name));
  for (const panel of document.querySelectorAll('.tab')) /** @type {HTMLElement} */ (panel).hidden = /** @type {HTMLElement} */ (panel).dataset.tab !== name;
}
