import { Init1795300000000 } from './1795300000000-Init';
import { TrialTree1795300100000 } from './1795300100000-TrialTree';
import { LabelStats1795300200000 } from './1795300200000-LabelStats';

/** Every migration in order. Listed explicitly so the app, the CLI and tests load the same set. */
export const MIGRATIONS = [Init1795300000000, TrialTree1795300100000, LabelStats1795300200000];
