// Compute units per turn as bars, drawn as the turns land. The chart is
// drawn in the svg's own pixels (its viewBox is its size), so the labels
// keep their shape at any width, with room kept for them around the bars.

const NS = 'http://www.w3.org/2000/svg';
/** Room for the label above the bars and the turn numbers below. */
const TOP = 18;
const BOTTOM = 16;
const SIDE = 6;

/** The last chart drawn, drawn again when the window's width changes. */
let last = /** @type {{ svg: SVGSVGElement, expectedTurns: number, units: Array<number | undefined> } | null} */ (null);
addEventListener('resize', () => last && drawUnits(last.svg, last.expectedTurns, last.units));

/**
 * @param {SVGSVGElement} svg
 * @param {number} expectedTurns the quote, so bars keep their width as turns come
 * @param {Array<number | undefined>} units per turn (undefined: not landed yet)
 */
export function drawUnits(svg, expectedTurns, units) {
  last = { svg, expectedTurns, units };
  // A hidden chart has no size yet: the next draw, once shown, has.
  const width = svg.clientWidth || 600;
  const height = svg.clientHeight || 140;
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.replaceChildren();
  const n = Math.max(expectedTurns, units.length, 1);
  const landed = units.filter((u) => u !== undefined);
  const max = landed.reduce((m, u) => Math.max(m, u), 1);
  const step = (width - 2 * SIDE) / n;
  const bottom = height - BOTTOM;
  const barsHeight = bottom - TOP;
  const axis = document.createElementNS(NS, 'line');
  Object.entries({ x1: SIDE, x2: width - SIDE, y1: bottom + 0.5, y2: bottom + 0.5 }).forEach(([k, v]) => axis.setAttribute(k, String(v)));
  svg.append(axis);
  units.forEach((u, i) => {
    if (u === undefined) return;
    const h = Math.max(1, (barsHeight * u) / max);
    const rect = document.createElementNS(NS, 'rect');
    rect.setAttribute('x', String(SIDE + i * step + step * 0.1));
    rect.setAttribute('width', String(Math.max(1, step * 0.8)));
    rect.setAttribute('y', String(bottom - h));
    rect.setAttribute('height', String(h));
    rect.dataset.turn = String(i + 1);
    const title = document.createElementNS(NS, 'title');
    title.textContent = `turn ${i + 1}: ${u.toLocaleString('en-US')} compute units`;
    rect.append(title);
    svg.append(rect);
  });
  const label = (/** @type {string} */ text, /** @type {number} */ x, /** @type {number} */ y, anchor = 'start') => {
    const t = document.createElementNS(NS, 'text');
    t.setAttribute('x', String(x));
    t.setAttribute('y', String(y));
    t.setAttribute('text-anchor', anchor);
    t.textContent = text;
    svg.append(t);
  };
  label(landed.length ? `max ${max.toLocaleString('en-US')} CU a turn (${landed.length} turns)` : 'waiting for the first turn to land…', SIDE, TOP - 5);
  label('turn 1', SIDE, height - 3);
  label(`turn ${n.toLocaleString('en-US')}`, width - SIDE, height - 3, 'end');
  svg.dataset.turns = String(landed.length);
}
