//! The tasks dimension: unfinished tasks the context shows no sign of.

use super::compiled::{name_bit, ValidConfig};
use super::{Step, TaskCounts};

/// Whether `name` is a task tool's. Most tool names are not, and their
/// bit tells it with one test; the few that may be are compared out of
/// line.
#[inline(always)]
pub(crate) fn is_task_tool(cfg: &ValidConfig<'_>, name: &str) -> bool {
    may_be_task_tool(cfg, name) && in_task_tools(cfg, name)
}

/// Whether `name`'s bit ([`name_bit`]) is a task tool's: `false` tells
/// that `name` is none.
#[inline(always)]
pub(crate) fn may_be_task_tool(cfg: &ValidConfig<'_>, name: &str) -> bool {
    cfg.task_tool_bits & name_bit(name) != 0
}

#[inline(never)]
fn in_task_tools(cfg: &ValidConfig<'_>, name: &str) -> bool {
    cfg.config.injection.task_tool_names.contains(name)
}

/// The tasks to tell: unfinished ones the agent is not `aware` of.
pub(crate) fn untold_tasks(step: &Step<'_>, aware: bool) -> Option<TaskCounts> {
    (step.tasks.has_uncompleted() && !aware).then_some(step.tasks)
}
