//! Unknown fields inside a request's core types (`Event`, `JobDef`, `Now`), refused by
//! name with the fields there are (issue 48: a misspelt `missd` was ignored without a
//! word, so the job ran with the default rule).
//!
//! The core's serde ignores unknown fields, and must go on doing so for the stored state
//! (docs/wire-format.md). The wire checks a request's own values instead: the decoded
//! value is serialized again through `Recorder`, which notes, for every struct, each field
//! it has, including those its serde leaves out when unset (`skip_field`); a key of the
//! request that its struct lacks is unknown. Serialization names the fields even inside an
//! internally tagged enum, where decoding hides them.

use serde::ser::{self, Serialize};
use serde_json::Value;

use crate::decode::{render, Step};
use crate::error::{ErrorKind, WireError};

/// The fields of a value's serialized form, as far as the check needs them.
enum Shape {
    /// A struct (or a struct variant with its tag): every field, with the shape of those
    /// written (`None`: left out when unset).
    Struct(Vec<(&'static str, Option<Shape>)>),
    /// A map or an externally tagged variant: its keys are data, not field names.
    Map(Vec<(String, Shape)>),
    Seq(Vec<Shape>),
    Leaf,
}

/// Refuses the first key of `input` (decoded as `value`) that no struct has, naming its
/// path below `prefix` and the fields accepted there.
pub(crate) fn check<T: Serialize>(value: &T, input: &Value, prefix: &str) -> Result<(), WireError> {
    let Ok(shape) = value.serialize(Recorder) else {
        return Ok(());
    };
    match unknown(input, &shape) {
        None => Ok(()),
        Some((path, accepted)) => {
            let key = match path.last() {
                Some(Step::Key(k)) => k.clone(),
                _ => String::new(),
            };
            let place = render(prefix, &path[..path.len().saturating_sub(1)]);
            let accepted: Vec<String> = accepted.iter().map(|f| format!("`{f}`")).collect();
            Err(WireError::new(
                ErrorKind::BadField,
                Some(render(prefix, &path)),
                format!(
                    "unknown field `{}` in `{place}`; accepted: {}",
                    clip(&key),
                    accepted.join(", ")
                ),
            ))
        }
    }
}

/// The path to the first unknown key and the fields accepted beside it. The path is built
/// only on the way back from a find, so a request without one allocates nothing here.
fn unknown(input: &Value, shape: &Shape) -> Option<(Vec<Step>, Vec<&'static str>)> {
    let (step, (mut path, accepted)) = match (input, shape) {
        (Value::Object(map), Shape::Struct(fields)) => map.iter().find_map(|(key, value)| {
            let found = match fields.iter().find(|(name, _)| name == key) {
                None => (Vec::new(), fields.iter().map(|(name, _)| *name).collect()),
                Some((_, Some(inner))) => unknown(value, inner)?,
                Some((_, None)) => return None,
            };
            Some((Step::Key(key.clone()), found))
        })?,
        (Value::Object(map), Shape::Map(entries)) => entries.iter().find_map(|(key, inner)| {
            Some((Step::Key(key.clone()), unknown(map.get(key)?, inner)?))
        })?,
        (Value::Array(items), Shape::Seq(shapes)) => items
            .iter()
            .zip(shapes)
            .enumerate()
            .find_map(|(i, (item, inner))| Some((Step::Index(i), unknown(item, inner)?)))?,
        _ => return None,
    };
    path.insert(0, step);
    Some((path, accepted))
}

/// At most 80 characters of a key echoed back.
fn clip(text: &str) -> &str {
    match text.char_indices().nth(80) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// A `Serializer` that writes nothing but the `Shape` of what it is given.
struct Recorder;

type Error = serde_json::Error;

macro_rules! leaves {
    ($($method:ident($($ty:ty)?)),* $(,)?) => {$(
        fn $method(self $(, _: $ty)?) -> Result<Shape, Error> {
            Ok(Shape::Leaf)
        }
    )*};
}

impl ser::Serializer for Recorder {
    type Ok = Shape;
    type Error = Error;
    type SerializeSeq = Items;
    type SerializeTuple = Items;
    type SerializeTupleStruct = Items;
    type SerializeTupleVariant = Variant<Items>;
    type SerializeMap = Entries;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Variant<Fields>;

    leaves!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
    );

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<Shape, Error> {
        Ok(Shape::Leaf)
    }
    fn serialize_some<V: ?Sized + Serialize>(self, value: &V) -> Result<Shape, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_struct<V: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &V,
    ) -> Result<Shape, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<V: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &V,
    ) -> Result<Shape, Error> {
        Ok(Shape::Map(vec![(
            variant.to_string(),
            value.serialize(self)?,
        )]))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Items, Error> {
        Ok(Items(Vec::new()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Items, Error> {
        Ok(Items(Vec::new()))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Items, Error> {
        Ok(Items(Vec::new()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant<Items>, Error> {
        Ok(Variant(variant, Items(Vec::new())))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Entries, Error> {
        Ok(Entries(Vec::new(), None))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields, Error> {
        Ok(Fields(Vec::new()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant<Fields>, Error> {
        Ok(Variant(variant, Fields(Vec::new())))
    }
}

struct Items(Vec<Shape>);
struct Entries(Vec<(String, Shape)>, Option<String>);
struct Fields(Vec<(&'static str, Option<Shape>)>);
/// An externally tagged variant: `{variant: inner}`.
struct Variant<I>(&'static str, I);

impl Items {
    fn push<V: ?Sized + Serialize>(&mut self, value: &V) -> Result<(), Error> {
        self.0.push(value.serialize(Recorder)?);
        Ok(())
    }
}

impl ser::SerializeSeq for Items {
    type Ok = Shape;
    type Error = Error;
    fn serialize_element<V: ?Sized + Serialize>(&mut self, value: &V) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Shape, Error> {
        Ok(Shape::Seq(self.0))
    }
}

impl ser::SerializeTuple for Items {
    type Ok = Shape;
    type Error = Error;
    fn serialize_element<V: ?Sized + Serialize>(&mut self, value: &V) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Shape, Error> {
        Ok(Shape::Seq(self.0))
    }
}

impl ser::SerializeTupleStruct for Items {
    type Ok = Shape;
    type Error = Error;
    fn serialize_field<V: ?Sized + Serialize>(&mut self, value: &V) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Shape, Error> {
        Ok(Shape::Seq(self.0))
    }
}

impl ser::SerializeTupleVariant for Variant<Items> {
    type Ok = Shape;
    type Error = Error;
    fn serialize_field<V: ?Sized + Serialize>(&mut self, value: &V) -> Result<(), Error> {
        self.1.push(value)
    }
    fn end(self) -> Result<Shape, Error> {
        Ok(Shape::Map(vec![(
            self.0.to_string(),
            Shape::Seq(self.1 .0),
        )]))
    }
}

impl ser::SerializeMap for Entries {
    type Ok = Shape;
    type Error = Error;
    fn serialize_key<K: ?Sized + Serialize>(&mut self, key: &K) -> Result<(), Error> {
        self.1 = Some(match serde_json::to_value(key)? {
            Value::String(s) => s,
            other => other.to_string(),
        });
        Ok(())
    }
    fn serialize_value<V: ?Sized + Serialize>(&mut self, value: &V) -> Result<(), Error> {
        let key = self.1.take().unwrap_or_default();
        self.0.push((key, value.serialize(Recorder)?));
        Ok(())
    }
    fn end(self) -> Result<Shape, Error> {
        Ok(Shape::Map(self.0))
    }
}

impl Fields {
    fn field<V: ?Sized + Serialize>(&mut self, key: &'static str, value: &V) -> Result<(), Error> {
        self.0.push((key, Some(value.serialize(Recorder)?)));
        Ok(())
    }
}

impl ser::SerializeStruct for Fields {
    type Ok = Shape;
    type Error = Error;
    fn serialize_field<V: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), Error> {
        self.0.push((key, None));
        Ok(())
    }
    fn end(self) -> Result<Shape, Error> {
        Ok(Shape::Struct(self.0))
    }
}

impl ser::SerializeStructVariant for Variant<Fields> {
    type Ok = Shape;
    type Error = Error;
    fn serialize_field<V: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<(), Error> {
        self.1.field(key, value)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), Error> {
        self.1 .0.push((key, None));
        Ok(())
    }
    fn end(self) -> Result<Shape, Error> {
        Ok(Shape::Map(vec![(
            self.0.to_string(),
            Shape::Struct(self.1 .0),
        )]))
    }
}
