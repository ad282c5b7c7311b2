/** A scoring request that cannot be honoured (unknown column, label without exactly two classes, bad split). */
export class ScoringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScoringError';
  }
}
