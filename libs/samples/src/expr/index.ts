export * from './feature-expr.schema';
export * from './feature-expr.check';
export * from './feature-expr.sql';
export * from './feature-expr.text';
