import type { ExperimentPlanner } from './experiments/experiment-planner';
import { AddPlanner } from './add/add.planner';
import { ScorePlanner } from './score/score.planner';
import { SubtractPlanner } from './subtract/subtract.planner';
import { MultiplyPlanner } from './multiply/multiply.planner';
import { DividePlanner } from './divide/divide.planner';
import { DiscoverPlanner } from './discover/discover.planner';

/** Every experiment kind the platform runs. */
export const PLANNERS: ExperimentPlanner[] = [
  new ScorePlanner(),
  new SubtractPlanner(),
  new AddPlanner(),
  new MultiplyPlanner(),
  new DividePlanner(),
  new DiscoverPlanner(),
] as ExperimentPlanner[];
