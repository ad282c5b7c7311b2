import { SetMetadata } from '@nestjs/common';
import type { Role } from '@abacus/core';

export const ACCESS_METADATA = 'abacus:access';

/** Who may call a route: `public` (no key), or the weakest role allowed. */
export type AccessLevel = Role | 'public';

/**
 * Every route declares its access level (on the handler or its controller); the access guard
 * refuses routes that declare none, so a new endpoint cannot be open by omission.
 */
export const Access = (level: AccessLevel) => SetMetadata(ACCESS_METADATA, level);
