//! The coefficients of the two logistic models of [`super::score`]. [`Model::DEFAULT`] is
//! written by `bench-multidoc --train` from the AEB and WCXB development pages (see
//! docs/multidoc.md); do not edit it by hand.

pub const FEATURES: usize = 44;
pub const CONTEXT: usize = 4;

/// Two logistic models: the first weighs a block by its own features, the second by those
/// and the first weights of its neighbours.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub first: [f32; FEATURES],
    pub second: [f32; FEATURES],
    pub context: [f32; CONTEXT],
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

fn dot(w: &[f32], x: &[f32]) -> f32 {
    w.iter().zip(x).map(|(a, b)| a * b).sum()
}

impl Model {
    pub fn first(&self, f: &[f32; FEATURES]) -> f32 {
        sigmoid(dot(&self.first, f))
    }

    pub fn second(&self, f: &[f32; FEATURES], context: &[f32; CONTEXT]) -> f32 {
        sigmoid(dot(&self.second, f) + dot(&self.context, context))
    }
}

include!("model_default.rs");
