/**
 * A store operation that failed for a reason the user can act on: the endpoint cannot be reached,
 * the bucket or prefix does not exist, access was refused, an object is missing. `location` names
 * the store URL or object (never a credential).
 */
export class StoreError extends Error {
  constructor(
    readonly location: string,
    readonly reason: string,
    readonly code: StoreErrorCode = 'failed',
  ) {
    super(`${location}: ${reason}`);
    this.name = 'StoreError';
  }
}

export type StoreErrorCode = 'unreachable' | 'no-bucket' | 'not-found' | 'denied' | 'invalid' | 'failed';
