//! The context-length dimension: the input within the buffer of the
//! compression threshold, at the start of a reply.

use super::compiled::ValidConfig;
use super::{ContextLength, Step};

/// Python's `int > float`, exactly (no conversion of the int to float).
pub(crate) fn int_gt_float(i: i64, f: f64) -> bool {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || f >= TWO_63 {
        return false;
    }
    if f < -TWO_63 {
        return true;
    }
    // In range, `as` truncates toward zero; step down to the floor for a
    // negative non-integer. Then `i > f` exactly when `i > floor(f)`.
    let (t, fraction) = crate::ieee::trunc(f);
    let floor = if fraction && f.is_sign_negative() { t - 1 } else { t };
    i > floor
}

pub(crate) fn context_length(cfg: &ValidConfig<'_>, step: &Step<'_>) -> Option<ContextLength> {
    if step.cur_iter != 0 {
        return None;
    }
    let ctx = &cfg.config.context;
    // In floats as Python computes them, rounded as the FPU would
    // (`ieee`: no soft-float arithmetic linked on a device).
    let size = crate::ieee::from_i64(step.context_size);
    // Python's int() truncates toward zero, as `as` does (saturating).
    let trigger_tokens = crate::ieee::trunc(crate::ieee::mul(ctx.trigger_ratio, size)).0;
    let threshold = crate::ieee::mul(crate::ieee::sub(ctx.trigger_ratio, cfg.buffer_ratio), size);
    int_gt_float(step.input_tokens, threshold).then_some(ContextLength {
        input_tokens: step.input_tokens,
        trigger_tokens,
        suggest_compression: ctx.compression_tool_enabled && step.tasks.in_progress == 0,
    })
}
