/** A sample table could not be read: names the file and the reason (missing, unsupported, malformed, unknown column). */
export class TableReadError extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`cannot read table ${file}: ${reason}`);
    this.name = 'TableReadError';
  }
}
