/** A sample build request cannot be served: `field` is the request path at fault (e.g. 'features.3.source.entityKey'). */
export class SampleBuildError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
    this.name = 'SampleBuildError';
  }
}
