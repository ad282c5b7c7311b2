import type { RegisterCommand } from './command.types';
import { registerDemo } from './demo.command';
import { registerExperiment } from './experiment.command';
import { registerDiscover } from './discover.command';
import { registerFeatures } from './features.command';
import { registerLines } from './lines.command';
import { registerSamples } from './samples.command';
import { registerBank } from './bank.command';
import { registerEmbeddings } from './embeddings.command';
import { registerSim } from './sim.command';
import { registerIv } from './iv.command';
import { registerBench } from './bench.command';
import { registerBenchExperiment } from './bench-experiment.command';
import { registerBenchLoad } from './bench-load.command';
import { registerBenchCalibration } from './bench-calibration.command';
import { registerBenchDiscover } from './bench-discover.command';
import { registerKeys } from './keys.command';
import { registerLogin } from './login.command';
import { registerAudit } from './audit.command';
import { registerModels } from './models.command';
import { registerServing } from './serving.command';
import { registerReport } from './report.command';

/** Every subcommand of `abacus`, in help order. */
export const COMMANDS: RegisterCommand[] = [
  registerExperiment,
  registerDiscover,
  registerSamples,
  registerBank,
  registerEmbeddings,
  registerServing,
  registerReport,
  registerFeatures,
  registerModels,
  registerLines,
  registerLogin,
  registerKeys,
  registerAudit,
  registerDemo,
  registerSim,
  registerIv,
  registerBench,
  registerBenchExperiment,
  registerBenchLoad,
  registerBenchCalibration,
  registerBenchDiscover,
];
