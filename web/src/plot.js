// Compute units per turn as bars, drawn as the turns land.

const NS = 'http://www.w3.org/2000/svg';
const W = 600;
const H = 140;
const PAD = 14;

/**
 * @param {SVGSVGElement} svg
 * @param {number} expectedTurns the quote, so bars keep their width as turns come
 * @param {Array<number | undefined>} units per turn (undefined: not landed yet)
 */
export function drawUnits(svg, expectedTurns, units) {
  svg.replaceChildren();
  const n = Math.max(expectedTurns, units.length, 1);
  const max = Math.max(1, ...units.filter((u) => u !== undefined).map(Number));
  const step = W / n;
  units.forEach((u, i) => {
    if (u === undefined) return;
    const h = ((H - 2 * PAD) * u) / max;
    const rect = document.createElementNS(NS, 'rect');
    rect.setAttribute('x', String(i * step + step * 0.1));
    rect.setAttribute('width', String(Math.max(1, step * 0.8)));
    rect.setAttribute('y', String(H - PAD - h));
    rect.setAttribute('height', String(h));
    const title = document.createElementNS(NS, 'title');
    title.textContent = `turn ${i + 1}: ${u.toLocaleString('en-US')} compute units`;
    rect.append(title);
    svg.append(rect);
  });
  const label = document.createElementNS(NS, 'text');
  label.setAttribute('x', '4');
  label.setAttribute('y', '12');
  const landed = units.some((u) => u !== undefined);
  label.textContent = landed ? `max ${max.toLocaleString('en-US')} CU` : 'waiting for the first turn to land…';
  svg.append(label);
}
