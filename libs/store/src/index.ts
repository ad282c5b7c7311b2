export * from './store-error';
export * from './store-url';
export * from './object-store';
export * from './file-store';
export * from './s3-store';
export * from './store-registry';
export * from './object-cache';
