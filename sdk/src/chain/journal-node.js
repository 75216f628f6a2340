// @ts-check
// A journal on disk for Node: each process appends to its own file,
// DIR/PID.jsonl; the files of processes that are gone are what they left.
// (client/src/journal.rs keeps one file per process the same way.)

import { appendFile, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return /** @type {{code?: string}} */ (e).code === 'EPERM';
  }
}

/**
 * A journal in `dir` (created when missing).
 * @param {string} dir
 * @returns {import('./journal.js').Journal}
 */
export function fileJournal(dir) {
  const mine = join(dir, `${process.pid}.jsonl`);
  /** @type {string[]} */
  let found = [];
  return {
    async record(entries) {
      await mkdir(dir, { recursive: true });
      await appendFile(mine, entries.map((e) => JSON.stringify(e) + '\n').join(''));
    },
    async left() {
      let names = [];
      try {
        names = await readdir(dir);
      } catch (e) {
        if (/** @type {{code?: string}} */ (e).code === 'ENOENT') return [];
        throw e;
      }
      found = names.filter((n) => /^\d+\.jsonl$/.test(n) && !alive(Number(n.split('.')[0])) && n !== `${process.pid}.jsonl`);
      const out = [];
      for (const name of found) {
        const text = await readFile(join(dir, name), 'utf8');
        // A line cut short by the kill is not a transaction that was sent.
        for (const line of text.split('\n')) {
          try {
            if (line) out.push(JSON.parse(line));
          } catch {}
        }
      }
      return out;
    },
    async settled() {
      for (const name of found) await rm(join(dir, name), { force: true });
      found = [];
    },
  };
}
