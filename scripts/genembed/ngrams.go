package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"
)

// Character n-grams for words outside the vocabulary (Bag of Substrings,
// Zhao, Mudgal and Liang 2018): a word's vector is approximated by the
// mean of the vectors of its character n-grams (3 to 5 characters, the
// word wrapped in < and >, as in FastText). The n-grams kept are the ones
// most vocabulary words contain; their vectors are fitted so that, for
// every vocabulary word, the mean of its kept n-grams' vectors comes close
// to the word's own vector (least squares, by a few passes of gradient
// steps over the words in rank order, from the mean of the vectors of the
// words that contain each n-gram). A misspelling or an unseen compound then
// lands near the words it shares most of its n-grams with.

const minN, maxN = 3, 5

// ngramsOf returns the distinct n-grams of word, in order of appearance.
func ngramsOf(word string) []string {
	r := []rune("<" + word + ">")
	var out []string
	seen := map[string]bool{}
	for n := minN; n <= maxN; n++ {
		for i := 0; i+n <= len(r); i++ {
			g := string(r[i : i+n])
			if !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out
}

func writeNgrams(buf *bytes.Buffer, words []string, vecs [][]float64, dims, keep, epochs, bits int) {
	df := map[string]int{}
	for _, w := range words {
		for _, g := range ngramsOf(w) {
			df[g]++
		}
	}
	grams := make([]string, 0, len(df))
	for g := range df {
		grams = append(grams, g)
	}
	sort.Slice(grams, func(i, j int) bool {
		if df[grams[i]] != df[grams[j]] {
			return df[grams[i]] > df[grams[j]]
		}
		return grams[i] < grams[j]
	})
	fmt.Fprintf(os.Stderr, "%d distinct n-grams, keeping %d\n", len(grams), min(keep, len(grams)))
	if len(grams) > keep {
		grams = grams[:keep]
	}
	id := make(map[string]int32, len(grams))
	for i, g := range grams {
		id[g] = int32(i)
	}
	// Each word's kept n-grams.
	wg := make([][]int32, len(words))
	for i, w := range words {
		for _, g := range ngramsOf(w) {
			if k, ok := id[g]; ok {
				wg[i] = append(wg[i], k)
			}
		}
	}
	// Start: the mean vector of the words containing each n-gram.
	gv := make([][]float64, len(grams))
	cnt := make([]float64, len(grams))
	for i := range gv {
		gv[i] = make([]float64, dims)
	}
	for i, gs := range wg {
		for _, k := range gs {
			for d, x := range vecs[i] {
				gv[k][d] += x
			}
			cnt[k]++
		}
	}
	for k := range gv {
		for d := range gv[k] {
			gv[k][d] /= max(cnt[k], 1)
		}
	}
	pred := make([]float64, dims)
	loss := func() float64 {
		var l float64
		for i, gs := range wg {
			if len(gs) == 0 {
				continue
			}
			meanOf(pred, gv, gs)
			for d, x := range vecs[i] {
				l += (pred[d] - x) * (pred[d] - x)
			}
		}
		return l / float64(len(words))
	}
	var norm2 float64
	for _, v := range vecs {
		for _, x := range v {
			norm2 += x * x
		}
	}
	fmt.Fprintf(os.Stderr, "n-gram fit: mean squared norm of the word vectors %.4f, start loss %.4f\n", norm2/float64(len(vecs)), loss())
	for e := 0; e < epochs; e++ {
		// Each step moves the word's prediction lr of the way to its
		// vector, spread evenly over its n-grams.
		lr := 0.5 / float64(1+e)
		for i, gs := range wg {
			if len(gs) == 0 {
				continue
			}
			meanOf(pred, gv, gs)
			for d, x := range vecs[i] {
				step := lr * (x - pred[d])
				for _, k := range gs {
					gv[k][d] += step
				}
			}
		}
		fmt.Fprintf(os.Stderr, "n-gram fit: epoch %d loss %.4f\n", e+1, loss())
	}
	buf.WriteString("NGRM")
	binary.Write(buf, binary.LittleEndian, uint32(len(grams)))
	buf.WriteByte(minN)
	buf.WriteByte(maxN)
	var tmp [binary.MaxVarintLen64]byte
	for _, g := range grams {
		buf.Write(tmp[:binary.PutUvarint(tmp[:], uint64(len(g)))])
		buf.WriteString(g)
	}
	writeQuantized(buf, gv, bits)
}

func meanOf(dst []float64, gv [][]float64, gs []int32) {
	clear(dst)
	for _, k := range gs {
		for d, x := range gv[k] {
			dst[d] += x
		}
	}
	for d := range dst {
		dst[d] /= float64(len(gs))
	}
}

// writeQuantized writes one f32 scale per vector, then the vectors as
// signed integers of bits bits (the words' format).
func writeQuantized(buf *bytes.Buffer, vs [][]float64, bits int) {
	qmax := 127.0
	if bits == 4 {
		qmax = 7
	}
	scales := make([]float32, len(vs))
	for i, v := range vs {
		m := 0.0
		for _, x := range v {
			m = math.Max(m, math.Abs(x))
		}
		if m == 0 {
			m = 1
		}
		scales[i] = float32(m / qmax)
	}
	binary.Write(buf, binary.LittleEndian, scales)
	for i, v := range vs {
		q := make([]int, len(v))
		for d, x := range v {
			q[d] = int(math.Round(x / float64(scales[i])))
		}
		if bits == 8 {
			for _, x := range q {
				buf.WriteByte(byte(int8(x)))
			}
		} else {
			for d := 0; d < len(q); d += 2 {
				buf.WriteByte(byte(q[d]&0x0f) | byte(q[d+1]&0x0f)<<4)
			}
		}
	}
}
