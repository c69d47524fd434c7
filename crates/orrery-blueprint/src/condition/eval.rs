//! The tree-walking interpreter: names, bounds, control flow and comprehensions. Operators live
//! in `ops`, builtin functions and methods in `builtins`, and the budgets that all of them
//! charge in `budget`.

use std::collections::HashMap;
use std::rc::Rc;

use rustpython_parser::ast::{self, Constant, Expr};

use super::budget::Budget;
use super::builtins;
use super::value::{self, build_set, insert_dict, Dict, Value};
use super::{ops, EvalError, EvalErrorKind, Limits, Namespace};

pub(crate) struct Interpreter<'a> {
    namespace: &'a Namespace,
    limits: &'a Limits,
    /// The steps, time and memory used so far, which operators and builtins charge too.
    pub(super) budget: Budget<'a>,
    depth: usize,
    /// Namespace values converted on first use, so a name read twice is the same object.
    converted: HashMap<&'a str, Value>,
    /// Comprehension variables, innermost last.
    locals: Vec<(&'a str, Value)>,
}

impl<'a> Interpreter<'a> {
    pub fn new(namespace: &'a Namespace, limits: &'a Limits) -> Self {
        Self { namespace, limits, budget: Budget::new(limits), depth: 0, converted: HashMap::new(), locals: Vec::new() }
    }

    pub fn eval(&mut self, expr: &'a Expr) -> Result<Value, EvalError> {
        self.budget.charge(1)?;
        if self.depth >= self.limits.max_depth {
            return Err(EvalError::limit(format!("expression nesting exceeds the limit of {}", self.limits.max_depth)));
        }
        self.depth += 1;
        let result = self.eval_node(expr);
        self.depth -= 1;
        result
    }

    fn eval_node(&mut self, expr: &'a Expr) -> Result<Value, EvalError> {
        // Each arm lives in its own function: in debug builds a single big match gives every
        // recursion level the stack frame of all arms together.
        match expr {
            Expr::Constant(constant) => {
                let value = constant_value(&constant.value)?;
                self.budget.charge_fresh(&value)?;
                Ok(value)
            }
            Expr::Name(name) => self.lookup(name.id.as_str()),
            Expr::BoolOp(node) => self.eval_boolop(node),
            Expr::UnaryOp(node) => self.eval_unary(node),
            Expr::BinOp(node) => self.eval_binop(node),
            Expr::Compare(node) => self.eval_compare(node),
            Expr::IfExp(node) => self.eval_ifexp(node),
            Expr::List(_) | Expr::Tuple(_) | Expr::Set(_) | Expr::Dict(_) => self.eval_display(expr),
            Expr::Subscript(node) => self.eval_subscript(node),
            Expr::Slice(_) => Err(EvalError::unsupported("extended slices are not supported")),
            Expr::Attribute(node) => self.eval_attribute(node),
            Expr::Call(node) => self.eval_call(node),
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) => self.eval_comprehension(expr),
            Expr::JoinedStr(_) | Expr::FormattedValue(_) => self.eval_fstring(expr),
            Expr::GeneratorExp(_) => Err(EvalError::unsupported("generator expressions are not supported")),
            Expr::Lambda(_) => Err(EvalError::unsupported("lambda is not supported")),
            Expr::NamedExpr(_) => Err(EvalError::unsupported("assignment expressions (':=') are not supported")),
            Expr::Starred(_) => Err(EvalError::unsupported("unpacking ('*') is not supported")),
            Expr::Await(_) | Expr::Yield(_) | Expr::YieldFrom(_) => {
                Err(EvalError::unsupported("await and yield are not supported"))
            }
        }
    }

    #[inline(never)]
    fn eval_boolop(&mut self, boolop: &'a ast::ExprBoolOp) -> Result<Value, EvalError> {
        let is_and = matches!(boolop.op, ast::BoolOp::And);
        let mut value = self.eval(&boolop.values[0])?;
        for operand in &boolop.values[1..] {
            if value.truthy() != is_and {
                break;
            }
            value = self.eval(operand)?;
        }
        Ok(value)
    }

    #[inline(never)]
    fn eval_unary(&mut self, unary: &'a ast::ExprUnaryOp) -> Result<Value, EvalError> {
        let operand = self.eval(&unary.operand)?;
        let result = ops::unary(unary.op, &operand)?;
        self.budget.charge_fresh(&result)?;
        Ok(result)
    }

    #[inline(never)]
    fn eval_binop(&mut self, binop: &'a ast::ExprBinOp) -> Result<Value, EvalError> {
        let left = self.eval(&binop.left)?;
        let right = self.eval(&binop.right)?;
        let result = ops::binary(&mut self.budget, binop.op, &left, &right)?;
        self.budget.charge_fresh(&result)?;
        Ok(result)
    }

    #[inline(never)]
    fn eval_compare(&mut self, compare: &'a ast::ExprCompare) -> Result<Value, EvalError> {
        let mut left = self.eval(&compare.left)?;
        let mut result = Value::Bool(true);
        for (op, comparator) in compare.ops.iter().zip(&compare.comparators) {
            let right = self.eval(comparator)?;
            result = ops::compare(&mut self.budget, *op, &left, &right)?;
            if !result.truthy() {
                return Ok(result);
            }
            left = right;
        }
        Ok(result)
    }

    #[inline(never)]
    fn eval_ifexp(&mut self, ifexp: &'a ast::ExprIfExp) -> Result<Value, EvalError> {
        if self.eval(&ifexp.test)?.truthy() {
            self.eval(&ifexp.body)
        } else {
            self.eval(&ifexp.orelse)
        }
    }

    #[inline(never)]
    fn eval_display(&mut self, expr: &'a Expr) -> Result<Value, EvalError> {
        match expr {
            Expr::List(list) => {
                let items = self.eval_elements(&list.elts)?;
                self.budget.charge_memory(value::vec_bytes(items.len()))?;
                Ok(Value::list(items))
            }
            Expr::Tuple(tuple) => {
                let items = self.eval_elements(&tuple.elts)?;
                self.budget.charge_memory(value::vec_bytes(items.len()))?;
                Ok(Value::tuple(items))
            }
            Expr::Set(set) => {
                let items = self.eval_elements(&set.elts)?;
                self.budget.charge_memory(value::map_bytes(items.len()))?;
                Ok(Value::Set(Rc::new(build_set(items)?)))
            }
            Expr::Dict(dict) => {
                let mut out = Dict::new();
                for (key, value) in dict.keys.iter().zip(&dict.values) {
                    let Some(key) = key else {
                        return Err(EvalError::unsupported("dict unpacking ('**') is not supported"));
                    };
                    let key = self.eval(key)?;
                    let value = self.eval(value)?;
                    insert_dict(&mut out, key, value)?;
                }
                self.budget.charge_memory(value::map_bytes(out.len()))?;
                Ok(Value::Dict(Rc::new(out)))
            }
            _ => unreachable!("eval_display is only called for displays"),
        }
    }

    #[inline(never)]
    fn eval_subscript(&mut self, subscript: &'a ast::ExprSubscript) -> Result<Value, EvalError> {
        let container = self.eval(&subscript.value)?;
        if let Expr::Slice(slice) = subscript.slice.as_ref() {
            let lower = self.eval_optional(slice.lower.as_deref())?;
            let upper = self.eval_optional(slice.upper.as_deref())?;
            let step = self.eval_optional(slice.step.as_deref())?;
            let result = ops::slice(&mut self.budget, &container, &lower, &upper, &step)?;
            self.budget.charge_fresh(&result)?;
            return Ok(result);
        }
        let index = self.eval(&subscript.slice)?;
        let result = ops::subscript(&container, &index)?;
        self.budget.charge_fresh(&result)?;
        Ok(result)
    }

    #[inline(never)]
    fn eval_attribute(&mut self, attribute: &'a ast::ExprAttribute) -> Result<Value, EvalError> {
        let object = self.eval(&attribute.value)?;
        let result = builtins::attribute(object, attribute.attr.as_str())?;
        self.budget.charge_memory(value::SLOT_BYTES)?;
        Ok(result)
    }

    #[inline(never)]
    fn eval_call(&mut self, call: &'a ast::ExprCall) -> Result<Value, EvalError> {
        let function = self.eval(&call.func)?;
        if !matches!(function, Value::Builtin(_) | Value::Method(_)) {
            return Err(EvalError::type_error(format!("'{}' object is not callable", function.type_name())));
        }
        let mut args = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            if matches!(arg, Expr::Starred(_)) {
                return Err(EvalError::unsupported("argument unpacking ('*') is not supported"));
            }
            args.push(self.eval(arg)?);
        }
        let mut kwargs = Vec::with_capacity(call.keywords.len());
        for keyword in &call.keywords {
            let Some(name) = &keyword.arg else {
                return Err(EvalError::unsupported("keyword unpacking ('**') is not supported"));
            };
            kwargs.push((name.as_str(), self.eval(&keyword.value)?));
        }
        // The arguments stay alive while the result is measured: what it shares with them
        // (elements copied into a new list, say) was counted when they were built.
        let operands: Vec<Value> = args.iter().chain(kwargs.iter().map(|(_, value)| value)).cloned().collect();
        let result = builtins::call(&mut self.budget, &function, args, kwargs)?;
        self.budget.charge_fresh(&result)?;
        drop(operands);
        Ok(result)
    }

    #[inline(never)]
    fn eval_comprehension(&mut self, expr: &'a Expr) -> Result<Value, EvalError> {
        match expr {
            Expr::ListComp(comp) => {
                let mut out = Vec::new();
                self.comprehension(&comp.generators, &mut |interpreter| {
                    let item = interpreter.eval(&comp.elt)?;
                    out.push(item);
                    interpreter.budget.charge_memory(value::SLOT_BYTES)?;
                    interpreter.budget.check_len(out.len())
                })?;
                Ok(Value::list(out))
            }
            Expr::SetComp(comp) => {
                let mut out = Vec::new();
                self.comprehension(&comp.generators, &mut |interpreter| {
                    let item = interpreter.eval(&comp.elt)?;
                    out.push(item);
                    interpreter.budget.charge_memory(value::SLOT_BYTES + value::ENTRY_BYTES)?;
                    interpreter.budget.check_len(out.len())
                })?;
                Ok(Value::Set(Rc::new(build_set(out)?)))
            }
            Expr::DictComp(comp) => {
                let mut out = Dict::new();
                self.comprehension(&comp.generators, &mut |interpreter| {
                    let key = interpreter.eval(&comp.key)?;
                    let value = interpreter.eval(&comp.value)?;
                    insert_dict(&mut out, key, value)?;
                    interpreter.budget.charge_memory(value::ENTRY_BYTES)?;
                    interpreter.budget.check_len(out.len())
                })?;
                Ok(Value::Dict(Rc::new(out)))
            }
            _ => unreachable!("eval_comprehension is only called for comprehensions"),
        }
    }

    #[inline(never)]
    fn eval_fstring(&mut self, expr: &'a Expr) -> Result<Value, EvalError> {
        match expr {
            Expr::JoinedStr(joined) => {
                let mut out = String::new();
                for part in &joined.values {
                    let piece = match part {
                        Expr::Constant(constant) => match &constant.value {
                            Constant::Str(text) => text.clone(),
                            other => value::to_str(&constant_value(other)?)?,
                        },
                        other => value::to_str(&self.eval(other)?)?,
                    };
                    self.budget.charge_memory(piece.len() as u64)?;
                    out.push_str(&piece);
                    self.budget.check_str_bytes(out.len())?;
                }
                self.budget.charge_memory(value::str_bytes(out.len()))?;
                Ok(Value::str(out))
            }
            Expr::FormattedValue(formatted) => {
                if formatted.format_spec.is_some() {
                    return Err(EvalError::unsupported("format specifications in f-strings are not supported"));
                }
                let value = self.eval(&formatted.value)?;
                let text = match formatted.conversion {
                    ast::ConversionFlag::Repr | ast::ConversionFlag::Ascii => value::repr(&value)?,
                    _ => value::to_str(&value)?,
                };
                self.budget.charge_memory(value::str_bytes(text.len()))?;
                Ok(Value::str(text))
            }
            _ => unreachable!("eval_fstring is only called for f-strings"),
        }
    }

    fn eval_elements(&mut self, elements: &'a [Expr]) -> Result<Vec<Value>, EvalError> {
        self.budget.check_len(elements.len())?;
        elements
            .iter()
            .map(|element| match element {
                Expr::Starred(_) => Err(EvalError::unsupported("unpacking ('*') is not supported")),
                other => self.eval(other),
            })
            .collect()
    }

    fn eval_optional(&mut self, expr: Option<&'a Expr>) -> Result<Value, EvalError> {
        match expr {
            Some(expr) => self.eval(expr),
            None => Ok(Value::None),
        }
    }

    fn lookup(&mut self, name: &'a str) -> Result<Value, EvalError> {
        if let Some((_, value)) = self.locals.iter().rev().find(|(local, _)| *local == name) {
            return Ok(value.clone());
        }
        if let Some(value) = self.converted.get(name) {
            return Ok(value.clone());
        }
        if let Some((key, json)) = self.namespace.entry(name) {
            let value = Value::from_json(json);
            self.budget.charge_fresh(&value)?;
            self.converted.insert(key, value.clone());
            return Ok(value);
        }
        match builtins::global(name) {
            // The constants as names: what `Ｔｒｕｅ` reads once normalised to NFKC.
            _ if name == "True" => Ok(Value::Bool(true)),
            _ if name == "False" => Ok(Value::Bool(false)),
            _ if name == "None" => Ok(Value::None),
            Some(Ok(builtin)) => Ok(Value::Builtin(builtin)),
            Some(Err(())) => {
                Err(EvalError::unsupported(format!("'{name}' is available in asteval but not in Orrery conditions")))
            }
            None => Err(EvalError::new(
                EvalErrorKind::NameError { name: name.to_owned() },
                format!("name '{name}' is not defined"),
            )),
        }
    }

    /// Runs `body` once per combination of the generators, with their targets bound, as
    /// asteval does: targets are unpacked like `zip` (no length check).
    fn comprehension(
        &mut self,
        generators: &'a [ast::Comprehension],
        body: &mut dyn FnMut(&mut Self) -> Result<(), EvalError>,
    ) -> Result<(), EvalError> {
        let Some((generator, rest)) = generators.split_first() else {
            return body(self);
        };
        if generator.is_async {
            return Err(EvalError::unsupported("async comprehensions are not supported"));
        }
        let iterable = self.eval(&generator.iter)?;
        let items = ops::iterate(&mut self.budget, &iterable)?;
        if self.depth >= self.limits.max_depth {
            return Err(EvalError::limit("comprehension nesting exceeds the depth limit"));
        }
        self.depth += 1;
        let scope = self.locals.len();
        let result = (|| {
            'items: for item in items {
                self.budget.charge(1)?;
                self.locals.truncate(scope);
                self.bind(&generator.target, item)?;
                for condition in &generator.ifs {
                    if !self.eval(condition)?.truthy() {
                        continue 'items;
                    }
                }
                self.comprehension(rest, body)?;
            }
            Ok(())
        })();
        self.locals.truncate(scope);
        self.depth -= 1;
        result
    }

    fn bind(&mut self, target: &'a Expr, value: Value) -> Result<(), EvalError> {
        match target {
            Expr::Name(name) => {
                self.locals.push((name.id.as_str(), value));
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let items = ops::iterate(&mut self.budget, &value)?;
                for (element, item) in elts.iter().zip(items) {
                    self.bind(element, item)?;
                }
                Ok(())
            }
            _ => Err(EvalError::unsupported("only names and tuples of names can be comprehension targets")),
        }
    }
}

fn constant_value(constant: &Constant) -> Result<Value, EvalError> {
    Ok(match constant {
        Constant::None => Value::None,
        Constant::Bool(b) => Value::Bool(*b),
        Constant::Str(s) => Value::str(s.as_str()),
        Constant::Int(i) => Value::Int(i.clone()),
        Constant::Float(f) => Value::Float(*f),
        Constant::Tuple(items) => Value::tuple(items.iter().map(constant_value).collect::<Result<_, _>>()?),
        Constant::Bytes(_) => return Err(EvalError::unsupported("bytes are not supported")),
        Constant::Complex { .. } => return Err(EvalError::unsupported("complex numbers are not supported")),
        Constant::Ellipsis => return Err(EvalError::unsupported("Ellipsis is not supported")),
    })
}
