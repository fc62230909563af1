//! The one place a fieldless enum's snake_case names are written: `snake_names!` gives an
//! enum `ALL` (every variant, in order) and `name()` (the name its serde form uses). The
//! serde derives spell the same names by `rename_all = "snake_case"`; a test here holds
//! every table to serde, so a rename in one place cannot leave the other behind.

/// `snake_names!(Type { Variant => "name", ... })`: `Type::ALL` and `Type::name`, which
/// one-line renderings, views and the docs-drift test use.
macro_rules! snake_names {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The name its serde form uses (snake_case).
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }
    };
}

pub(crate) use snake_names;

#[cfg(test)]
mod tests {
    use crate::effect::{CancelReason, ClockGapKind, Incident, MissCause, Trigger, WaitReason};
    use crate::view::Status;

    /// Each name is what serde writes for the variant and what serde reads back.
    fn agrees<T>(all: &[T], name: fn(T) -> &'static str)
    where
        T: Copy + std::fmt::Debug + PartialEq + serde::Serialize + serde::de::DeserializeOwned,
    {
        for &v in all {
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json, serde_json::Value::from(name(v)), "{v:?}");
            assert_eq!(serde_json::from_value::<T>(json).unwrap(), v);
        }
    }

    #[test]
    fn every_name_table_is_the_serde_form() {
        agrees(Trigger::ALL, Trigger::name);
        agrees(MissCause::ALL, MissCause::name);
        agrees(ClockGapKind::ALL, ClockGapKind::name);
        agrees(WaitReason::ALL, WaitReason::name);
        agrees(CancelReason::ALL, CancelReason::name);
        agrees(Incident::ALL, Incident::name);
        agrees(Status::ALL, Status::name);
    }

    /// Old names serde still reads (`#[serde(alias)]`), which `ALL` rightly lacks.
    const ALIASES: &[&str] = &["clock_jump"];

    /// `ALL` lists every variant: serde refuses an unknown name with the list of the names
    /// it knows, and that list is `ALL`'s names (and the old aliases).
    fn complete<T: serde::de::DeserializeOwned + std::fmt::Debug + Copy>(
        all: &[T],
        name: fn(T) -> &'static str,
    ) {
        let err = serde_json::from_str::<T>("\"\\u0000\"")
            .unwrap_err()
            .to_string();
        let (_, list) = err
            .split_once("expected ")
            .expect("an unknown-variant error");
        let mut listed: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
        listed.retain(|n| !ALIASES.contains(n));
        let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
        assert_eq!(listed, names, "{err}");
    }

    #[test]
    fn all_is_complete() {
        complete(Trigger::ALL, Trigger::name);
        complete(MissCause::ALL, MissCause::name);
        complete(ClockGapKind::ALL, ClockGapKind::name);
        complete(WaitReason::ALL, WaitReason::name);
        complete(CancelReason::ALL, CancelReason::name);
        complete(Incident::ALL, Incident::name);
        complete(Status::ALL, Status::name);
    }
}
