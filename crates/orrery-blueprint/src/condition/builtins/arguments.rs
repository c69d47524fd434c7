//! The arguments of a call of a builtin function or method, and the checks on them that
//! functions and methods share: how many positional arguments, which keywords, and the
//! `TypeError` of an argument of a type the callee does not take.

use crate::condition::value::Value;
use crate::condition::EvalError;

pub(super) type Kwargs<'k> = Vec<(&'k str, Value)>;

pub(super) struct Arguments<'k> {
    pub(super) function: &'static str,
    pub(super) positional: Vec<Value>,
    pub(super) keywords: Kwargs<'k>,
}

impl<'k> Arguments<'k> {
    pub(super) fn count(&self, min: usize, max: usize) -> Result<(), EvalError> {
        let given = self.positional.len();
        if given < min || given > max {
            let expected = if min == max {
                format!("exactly {min}")
            } else if given < min {
                format!("at least {min}")
            } else {
                format!("at most {max}")
            };
            let plural = if min == max && min == 1 || (given > max && max == 1) { "argument" } else { "arguments" };
            return Err(EvalError::type_error(format!(
                "{}() takes {expected} {plural} ({given} given)",
                self.function
            )));
        }
        Ok(())
    }

    pub(super) fn keyword(&mut self, name: &str) -> Option<Value> {
        let position = self.keywords.iter().position(|(key, _)| *key == name)?;
        Some(self.keywords.remove(position).1)
    }

    pub(super) fn no_more_keywords(&self) -> Result<(), EvalError> {
        match self.keywords.first() {
            Some((name, _)) => {
                Err(EvalError::type_error(format!("'{name}' is an invalid keyword argument for {}()", self.function)))
            }
            None => Ok(()),
        }
    }

    pub(super) fn get(&self, index: usize) -> Option<&Value> {
        self.positional.get(index)
    }
}

pub(super) fn type_error_arg(function: &str, value: &Value) -> EvalError {
    EvalError::type_error(format!("{function}() argument must be a supported type, not '{}'", value.type_name()))
}
