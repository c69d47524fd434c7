//! The callable values: the builtin functions Orrery provides, by name ([`Builtin`]; some of
//! them are also Python's types, `int` or `str`), and a method bound to its receiver
//! ([`Method`]). They are apart from `builtins`, which calls them, because a [`Value`] holds
//! them and values stand below the operators and builtins that work on them.
//!
//! [`Value`]: super::value::Value

macro_rules! builtins {
    ($($variant:ident => $name:literal, $is_type:literal;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) enum Builtin { $($variant),* }

        impl Builtin {
            pub fn name(self) -> &'static str {
                match self { $(Builtin::$variant => $name),* }
            }

            pub fn is_type(self) -> bool {
                match self { $(Builtin::$variant => $is_type),* }
            }

            pub fn by_name(name: &str) -> Option<Builtin> {
                match name { $($name => Some(Builtin::$variant),)* _ => None }
            }
        }

        /// The names of the builtin functions a condition can call, in alphabetical order.
        pub const BUILTIN_NAMES: &[&str] = &[$($name),*];
    };
}

builtins! {
    Abs => "abs", false;
    All => "all", false;
    Any => "any", false;
    Bin => "bin", false;
    Bool => "bool", true;
    Chr => "chr", false;
    Dict => "dict", true;
    Divmod => "divmod", false;
    Enumerate => "enumerate", true;
    Float => "float", true;
    Hex => "hex", false;
    Int => "int", true;
    Isinstance => "isinstance", false;
    Len => "len", false;
    List => "list", true;
    Max => "max", false;
    Min => "min", false;
    Oct => "oct", false;
    Ord => "ord", false;
    Pow => "pow", false;
    Range => "range", true;
    Repr => "repr", false;
    Reversed => "reversed", true;
    Round => "round", false;
    Set => "set", true;
    Sorted => "sorted", false;
    Str => "str", true;
    Sum => "sum", false;
    Tuple => "tuple", true;
    Type => "type", false;
    Zip => "zip", true;
}

/// A method bound to its receiver; the name is one of the `*_METHODS` tables of
/// `builtins::methods`, which makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Method(pub(super) &'static str);

impl Method {
    pub fn name(self) -> &'static str {
        self.0
    }
}
