import type { ExperimentPlanner } from './experiments/experiment-planner';
import { ScorePlanner } from './score/score.planner';

/** Every experiment kind the platform runs. */
export const PLANNERS: ExperimentPlanner[] = [new ScorePlanner() as ExperimentPlanner];
