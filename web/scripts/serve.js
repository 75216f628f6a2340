// Serves the built page (target/web/dist) as static files on 127.0.0.1.
// `node scripts/serve.js [port]` (default 5173; 0 picks a free port) prints
// the URL; the browser test imports `serve` and stops it itself.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DIST = fileURLToPath(new URL('../../target/web/dist/', import.meta.url));

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm', // lets the browser compile while it downloads
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * @param {number} port
 * @param {string} [root]
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function serve(port, root = DIST) {
  await stat(join(root, 'index.html')).catch(() => {
    throw new Error(`${root}index.html is missing: build the page first (make web, or npm run build in web/)`);
  });
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = normalize(join(root, path.endsWith('/') ? `${path}index.html` : path));
    if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) {
      res.writeHead(403).end('forbidden');
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, {
        'content-type': TYPES[/** @type {keyof typeof TYPES} */ (extname(file))] ?? 'application/octet-stream',
        'cache-control': 'no-cache',
      });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${path}`);
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(undefined));
  });
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 5173);
  const { url } = await serve(port);
  console.log(`Curta page: ${url}  (serving ${DIST}; Ctrl-C stops it)`);
  console.log('On chain it talks to http://127.0.0.1:8899 by default: run `make localnet` beside it.');
}
