import { RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ACCESS_METADATA, type AccessLevel } from './access.decorator';

export interface RouteInfo {
  method: string;
  /** full path as served, e.g. /api/v1/experiments/:id/cancel */
  path: string;
  access: AccessLevel | undefined;
}

const join = (...parts: string[]) =>
  `/${parts
    .flatMap((p) => p.split('/'))
    .filter(Boolean)
    .join('/')}`;

/** Every route of the given controllers, as Nest registers them, with its declared access level. */
export function describeRoutes(controllers: Type[], prefix: string, unprefixed: string[] = ['/']): RouteInfo[] {
  const routes: RouteInfo[] = [];
  for (const c of controllers) {
    const base = (Reflect.getMetadata(PATH_METADATA, c) as string | undefined) ?? '';
    const classAccess = Reflect.getMetadata(ACCESS_METADATA, c) as AccessLevel | undefined;
    const proto = c.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const sub = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      if (sub === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      for (const s of Array.isArray(sub) ? sub : [sub]) {
        const local = join(base, s);
        routes.push({
          method,
          path: unprefixed.includes(local) ? local : join(prefix, local),
          access: (Reflect.getMetadata(ACCESS_METADATA, handler) as AccessLevel | undefined) ?? classAccess,
        });
      }
    }
  }
  return routes;
}
