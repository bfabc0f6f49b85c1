//! The two small neural networks of [`super::score`] (one hidden layer of [`HIDDEN`] tanh
//! units, a logistic output). [`Model::DEFAULT`] is written by `bench-multidoc --train` from
//! the AEB and WCXB development pages (see docs/multidoc.md); do not edit it by hand.

pub const FEATURES: usize = 52;
pub const CONTEXT: usize = 4;
pub const HIDDEN: usize = 12;
/// Nets averaged in each stage (trained from different starting weights: their mean varies
/// less from one training to the next than any one of them).
pub const ENSEMBLE: usize = 3;
/// The second network's inputs: a block's features, then its neighbours' first weights.
pub const SECOND_INPUTS: usize = FEATURES + CONTEXT;

/// One hidden layer: `hidden[j]` weighs the inputs (the first of which is the constant 1),
/// `out` the hidden units (its last element is the bias).
#[derive(Debug, Clone, PartialEq)]
pub struct Net<const D: usize> {
    pub hidden: [[f32; D]; HIDDEN],
    pub out: [f32; HIDDEN + 1],
}

impl<const D: usize> Net<D> {
    pub const ZERO: Self = Net {
        hidden: [[0.0; D]; HIDDEN],
        out: [0.0; HIDDEN + 1],
    };

    /// The probability the net gives to `x`.
    pub fn eval(&self, x: &[f32; D]) -> f32 {
        let mut z = self.out[HIDDEN];
        for (w, o) in self.hidden.iter().zip(&self.out) {
            let a: f32 = w.iter().zip(x).map(|(w, x)| w * x).sum();
            z += o * a.tanh();
        }
        1.0 / (1.0 + (-z).exp())
    }
}

/// The segmenter's model: the first nets weigh a block by its own features, the second by
/// those and the first weights of its neighbours; each stage is the mean of its nets.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub first: [Net<FEATURES>; ENSEMBLE],
    pub second: [Net<SECOND_INPUTS>; ENSEMBLE],
}

impl Model {
    pub fn first(&self, f: &[f32; FEATURES]) -> f32 {
        self.first.iter().map(|n| n.eval(f)).sum::<f32>() / ENSEMBLE as f32
    }

    pub fn second(&self, f: &[f32; FEATURES], context: &[f32; CONTEXT]) -> f32 {
        let mut x = [0.0; SECOND_INPUTS];
        x[..FEATURES].copy_from_slice(f);
        x[FEATURES..].copy_from_slice(context);
        self.second.iter().map(|n| n.eval(&x)).sum::<f32>() / ENSEMBLE as f32
    }
}

include!("model_default.rs");
