import { Init1795300000000 } from './1795300000000-Init';
import { TrialTree1795300100000 } from './1795300100000-TrialTree';
import { AccessControl1795300200000 } from './1795300200000-AccessControl';
import { TrialErrorStack1795300300000 } from './1795300300000-TrialErrorStack';
import { LabelStats1795300400000 } from './1795300400000-LabelStats';
import { DataBank1795300500000 } from './1795300500000-DataBank';
import { SharedEmbeddings1795300600000 } from './1795300600000-SharedEmbeddings';
import { ModelTiers1795300700000 } from './1795300700000-ModelTiers';
import { Serving1795300800000 } from './1795300800000-Serving';
import { Reports1795300900000 } from './1795300900000-Reports';
import { SampleReferences1795301000000 } from './1795301000000-SampleReferences';
import { FeatureExpressions1795301100000 } from './1795301100000-FeatureExpressions';

/** Every migration in order. Listed explicitly so the app, the CLI and tests load the same set. */
export const MIGRATIONS = [
  Init1795300000000,
  TrialTree1795300100000,
  AccessControl1795300200000,
  TrialErrorStack1795300300000,
  LabelStats1795300400000,
  DataBank1795300500000,
  SharedEmbeddings1795300600000,
  ModelTiers1795300700000,
  Serving1795300800000,
  Reports1795300900000,
  SampleReferences1795301000000,
  FeatureExpressions1795301100000,
];
