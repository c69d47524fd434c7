//! The budgets of one evaluation ([`Limits`]): the steps it takes, the time on the clock and the
//! memory of the values it builds, and the per-value limits on a collection's length, a
//! string's bytes and an integer's bits. The interpreter, the operators and the builtins
//! charge and check the one [`Budget`] of their evaluation, which is all they share.

use std::time::Instant;

use super::value::{self, Value};
use super::{EvalError, Limits};

/// What one evaluation has used so far, against its [`Limits`].
pub(crate) struct Budget<'a> {
    limits: &'a Limits,
    steps: u64,
    /// The step count at which the clock is read next.
    next_clock_check: u64,
    deadline: Option<Instant>,
    /// Bytes of the values built so far ([`Limits::max_memory_bytes`]).
    memory: u64,
}

impl<'a> Budget<'a> {
    /// A budget with nothing used yet; the clock starts now.
    pub fn new(limits: &'a Limits) -> Self {
        Self {
            limits,
            steps: 0,
            next_clock_check: CLOCK_EVERY,
            deadline: Instant::now().checked_add(limits.max_time),
            memory: 0,
        }
    }

    /// Charges `count` steps against [`Limits::max_steps`], and reads the clock against
    /// [`Limits::max_time`] every few thousand steps.
    pub fn charge(&mut self, count: u64) -> Result<(), EvalError> {
        self.steps = self.steps.saturating_add(count);
        if self.steps > self.limits.max_steps {
            return Err(EvalError::limit(format!(
                "the condition exceeds its work budget of {} steps",
                self.limits.max_steps
            )));
        }
        if self.steps >= self.next_clock_check {
            self.next_clock_check = self.steps.saturating_add(CLOCK_EVERY);
            self.check_clock()?;
        }
        Ok(())
    }

    fn check_clock(&self) -> Result<(), EvalError> {
        if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Err(EvalError::limit(format!(
                "the condition exceeds its time budget of {}",
                human_duration(self.limits.max_time)
            )));
        }
        Ok(())
    }

    /// Charges `bytes` of newly built values against [`Limits::max_memory_bytes`].
    pub fn charge_memory(&mut self, bytes: u64) -> Result<(), EvalError> {
        self.memory = self.memory.saturating_add(bytes);
        if self.memory > self.limits.max_memory_bytes {
            return Err(EvalError::limit(format!(
                "the condition exceeds its memory budget of {} (the values it builds, added up)",
                human_bytes(self.limits.max_memory_bytes)
            )));
        }
        Ok(())
    }

    /// Charges what `value` holds that nothing else holds: the parts an operation just built.
    /// Call it while the operation's operands are still alive, so that what the result shares
    /// with them is not counted.
    pub fn charge_fresh(&mut self, value: &Value) -> Result<(), EvalError> {
        let bytes = value::fresh_bytes(value);
        self.charge_memory(bytes)
    }

    /// Bytes of memory charged so far.
    #[cfg(test)]
    pub fn memory_charged(&self) -> u64 {
        self.memory
    }

    pub fn check_len(&self, len: usize) -> Result<(), EvalError> {
        if len > self.limits.max_collection_len {
            return Err(EvalError::limit(format!(
                "a collection of {len} elements exceeds the limit of {}",
                self.limits.max_collection_len
            )));
        }
        Ok(())
    }

    pub fn check_str_bytes(&self, bytes: usize) -> Result<(), EvalError> {
        if bytes > self.limits.max_string_bytes {
            return Err(EvalError::limit(format!(
                "a string of {bytes} bytes exceeds the limit of {}",
                self.limits.max_string_bytes
            )));
        }
        Ok(())
    }

    pub fn check_int_bits(&self, bits: u64) -> Result<(), EvalError> {
        if bits > self.limits.max_int_bits {
            return Err(EvalError::limit(format!(
                "an integer of {bits} bits exceeds the limit of {}",
                self.limits.max_int_bits
            )));
        }
        Ok(())
    }
}

/// How many steps pass between two readings of the clock.
const CLOCK_EVERY: u64 = 1 << 12;

fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

fn human_duration(duration: std::time::Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}
