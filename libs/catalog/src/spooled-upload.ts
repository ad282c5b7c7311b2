import fs from 'node:fs';

/**
 * Moves a spooled upload to its place in the data directory (the spool lies in the data directory's
 * tmp/, so this is a rename: no second copy of a large file), copying only when the two are on
 * different filesystems. The spool is gone afterwards either way.
 */
export function moveSpooled(spooled: string, dest: string): void {
  try {
    fs.renameSync(spooled, dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    fs.copyFileSync(spooled, dest);
    fs.rmSync(spooled, { force: true });
  }
}
