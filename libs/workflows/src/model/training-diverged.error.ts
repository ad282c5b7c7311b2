/** Training ended with a non-finite loss: the same data and settings diverge again, so it is not retried. */
export class TrainingDivergedError extends Error {
  constructor(readonly finalLoss: number) {
    super(`training diverged: final loss is ${finalLoss} (try a lower learning rate, or check the inputs for extreme values)`);
    this.name = 'TrainingDivergedError';
  }
}
